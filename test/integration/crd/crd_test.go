package crd

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/tools/cache"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	accordinformers "github.com/accord-sched/accord/pkg/generated/informers/externalversions"
	"github.com/accord-sched/accord/test/harness"
)

var env *harness.Env

func TestMain(m *testing.M) { harness.Main(m, &env, harness.Options{WithoutControllers: true}) }

func TestClusterScopedResourceLifecycle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := "node-" + rand.String(6)
	client := env.Accord.SchedulingV1alpha1().ClusterScopedResources()

	factory := accordinformers.NewSharedInformerFactory(env.Accord, 0)
	informer := factory.Scheduling().V1alpha1().ClusterScopedResources()
	events := make(chan string, 10)
	_, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if o := obj.(*schedv1alpha1.ClusterScopedResource); o.Name == name {
				events <- "add"
			}
		},
		UpdateFunc: func(_, obj any) {
			if o := obj.(*schedv1alpha1.ClusterScopedResource); o.Name == name {
				events <- "update:" + o.ResourceVersion
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	harness.StartInformers(t, factory)

	created, err := client.Create(ctx, &schedv1alpha1.ClusterScopedResource{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: schedv1alpha1.ClusterScopedResourceSpec{
			ResourcesFilter: map[corev1.ResourceName]bool{"example.com/memory": true},
			ResourcesScore:  map[corev1.ResourceName]schedv1alpha1.ResourceScore{"example.com/memory": 55},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	defer func() { _ = client.Delete(context.Background(), name, metav1.DeleteOptions{}) }()
	expectEvent(t, events, "add")

	list, err := client.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if !containsName(list.Items, name) {
		t.Fatalf("list does not contain %s", name)
	}

	created.Spec.ResourcesScore["example.com/memory"] = 80
	updated, err := client.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	expectEvent(t, events, "update:"+updated.ResourceVersion)

	// The lister sees the update.
	if err := harness.WaitFor(ctx, 5*time.Second, func(context.Context) (bool, error) {
		got, err := informer.Lister().Get(name)
		return err == nil && got.Spec.ResourcesScore["example.com/memory"] == 80, nil
	}); err != nil {
		t.Fatalf("lister never saw the update: %v", err)
	}
}

func containsName(items []schedv1alpha1.ClusterScopedResource, name string) bool {
	for _, i := range items {
		if i.Name == name {
			return true
		}
	}
	return false
}

func expectEvent(t *testing.T, events <-chan string, want string) {
	t.Helper()
	select {
	case got := <-events:
		if got != want {
			t.Fatalf("informer event = %q, want %q", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no informer event %q within 5s", want)
	}
}

func TestClusterScopedResourceSchemaRejectsInvalid(t *testing.T) {
	ctx := context.Background()
	client := env.Accord.SchedulingV1alpha1().ClusterScopedResources()
	tests := []struct {
		name      string
		spec      schedv1alpha1.ClusterScopedResourceSpec
		wantField string
		wantText  string
	}{{
		name:      "score above 100",
		spec:      schedv1alpha1.ClusterScopedResourceSpec{ResourcesScore: map[corev1.ResourceName]schedv1alpha1.ResourceScore{"example.com/memory": 101}},
		wantField: "spec.resourcesScore.example.com/memory",
		wantText:  "less than or equal to 100",
	}, {
		name:      "negative score",
		spec:      schedv1alpha1.ClusterScopedResourceSpec{ResourcesScore: map[corev1.ResourceName]schedv1alpha1.ResourceScore{"example.com/memory": -1}},
		wantField: "spec.resourcesScore.example.com/memory",
		wantText:  "greater than or equal to 0",
	}, {
		name:      "empty resource name in filter",
		spec:      schedv1alpha1.ClusterScopedResourceSpec{ResourcesFilter: map[corev1.ResourceName]bool{"": true}},
		wantField: "spec.resourcesFilter",
		wantText:  "resource names must not be empty",
	}, {
		name:      "empty resource name in score",
		spec:      schedv1alpha1.ClusterScopedResourceSpec{ResourcesScore: map[corev1.ResourceName]schedv1alpha1.ResourceScore{"": 5}},
		wantField: "spec.resourcesScore",
		wantText:  "resource names must not be empty",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := client.Create(ctx, &schedv1alpha1.ClusterScopedResource{
				ObjectMeta: metav1.ObjectMeta{Name: "invalid-" + rand.String(6)},
				Spec:       tc.spec,
			}, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) {
				t.Fatalf("create error = %v, want Invalid", err)
			}
			if !strings.Contains(err.Error(), tc.wantField) || !strings.Contains(err.Error(), tc.wantText) {
				t.Fatalf("error %q does not name field %q with %q", err, tc.wantField, tc.wantText)
			}
		})
	}
}

func TestNodeMetricLifecycle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := "node-" + rand.String(6)
	client := env.Accord.SloV1alpha1().NodeMetrics()

	factory := accordinformers.NewSharedInformerFactory(env.Accord, 0)
	lister := factory.Slo().V1alpha1().NodeMetrics().Lister()
	harness.StartInformers(t, factory)

	watch, err := client.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer watch.Stop()

	nm, err := client.Create(ctx, &slov1alpha1.NodeMetric{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       slov1alpha1.NodeMetricSpec{ReportIntervalSeconds: new(int64(60))},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	defer func() { _ = client.Delete(context.Background(), name, metav1.DeleteOptions{}) }()

	now := metav1.NewTime(time.Now().Truncate(time.Second))
	nm.Status = slov1alpha1.NodeMetricStatus{
		UpdateTime: &now,
		NodeUsage:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3800m")},
		PodsUsage: []slov1alpha1.PodUsage{{Namespace: "default", Name: "web-1",
			Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}},
	}
	if _, err := client.UpdateStatus(ctx, nm, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update status: %v", err)
	}

	seen := map[string]bool{}
	for !seen["MODIFIED"] {
		select {
		case ev := <-watch.ResultChan():
			seen[string(ev.Type)] = true
		case <-ctx.Done():
			t.Fatalf("watch saw %v, want ADDED and MODIFIED", seen)
		}
	}
	if !seen["ADDED"] {
		t.Fatalf("watch saw %v, want ADDED before MODIFIED", seen)
	}
	if err := harness.WaitFor(ctx, 5*time.Second, func(context.Context) (bool, error) {
		got, err := lister.Get(name)
		if err != nil || got.Status.UpdateTime == nil {
			return false, nil
		}
		cpu := got.Status.NodeUsage[corev1.ResourceCPU]
		return cpu.MilliValue() == 3800 && len(got.Status.PodsUsage) == 1, nil
	}); err != nil {
		t.Fatalf("lister never saw the status: %v", err)
	}

	// Status is a subresource: an update of the main resource does not change it.
	got, err := client.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Status.NodeUsage = nil
	got.Spec.ReportIntervalSeconds = new(int64(30))
	after, err := client.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if cpu := after.Status.NodeUsage[corev1.ResourceCPU]; cpu.MilliValue() != 3800 || *after.Spec.ReportIntervalSeconds != 30 {
		t.Fatalf("after spec update: status cpu=%v interval=%d; want status kept and interval 30", cpu.String(), *after.Spec.ReportIntervalSeconds)
	}

	// The schema rejects a report interval below 1 and names the field.
	after.Spec.ReportIntervalSeconds = new(int64(0))
	_, err = client.Update(ctx, after, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.reportIntervalSeconds") {
		t.Fatalf("reportIntervalSeconds=0: error %v, want Invalid naming spec.reportIntervalSeconds", err)
	}
}
