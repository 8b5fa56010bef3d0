package nodecrdresourcefit

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/apis/config"
	"github.com/accord-sched/accord/apis/descheduler"
	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/descheduler/evictions"
	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/defaultevictor"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/plugintest"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

const exMem corev1.ResourceName = "example.com/memory"

func reqPod(name, node string, res ...corev1.ResourceName) *corev1.Pod {
	p := fake.Pod("ns", name, node, 100)
	for _, r := range res {
		p.Spec.Containers[0].Resources.Requests[r] = resource.MustParse("1")
	}
	return p
}

func TestArgs(t *testing.T) {
	cases := []struct {
		name   string
		args   NodeCRDResourceFitArgs
		errs   []string
		policy config.MissingCRPolicy
	}{
		{name: "defaults to Reject", policy: config.MissingCRPolicyReject},
		{name: "Ignore kept", args: NodeCRDResourceFitArgs{MissingCRPolicy: config.MissingCRPolicyIgnore}, policy: config.MissingCRPolicyIgnore},
		{name: "unknown policy", args: NodeCRDResourceFitArgs{MissingCRPolicy: "Maybe"}, errs: []string{"args.missingCRPolicy"}},
		{name: "include and exclude", args: NodeCRDResourceFitArgs{Namespaces: &pluginutil.Namespaces{Include: []string{"a"}, Exclude: []string{"b"}}}, errs: []string{"args.namespaces"}},
		{name: "bad namespace name", args: NodeCRDResourceFitArgs{Namespaces: &pluginutil.Namespaces{Exclude: []string{"Not_OK"}}}, errs: []string{"args.namespaces.exclude[0]"}},
		{name: "bad label selector", args: NodeCRDResourceFitArgs{LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}}, errs: []string{"args.labelSelector.matchExpressions[0].operator"}},
		{name: "bad scheduler name", args: NodeCRDResourceFitArgs{SchedulerNames: []string{"ok", "NOT OK"}}, errs: []string{"args.schedulerNames[1]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.args
			a.SetDefaults()
			errs := a.Validate(field.NewPath("args"))
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
			}
			if !slices.Equal(got, tc.errs) {
				t.Fatalf("errors on %v, want %v (%v)", got, tc.errs, errs)
			}
			if tc.errs == nil && a.MissingCRPolicy != tc.policy {
				t.Fatalf("policy %q, want %q", a.MissingCRPolicy, tc.policy)
			}
		})
	}
}

func TestViolationMatchesFilterRules(t *testing.T) {
	enabled := plugintest.CSR("n", corev1.ResourceCPU, exMem)
	cases := []struct {
		name   string
		csr    *schedv1alpha1.ClusterScopedResource
		policy config.MissingCRPolicy
		pod    *corev1.Pod
		want   bool
	}{
		{"enabled", enabled, config.MissingCRPolicyReject, reqPod("a", "n", exMem), false},
		{"not enabled", plugintest.CSR("n"), config.MissingCRPolicyReject, reqPod("a", "n", exMem), true},
		{"explicitly false", &schedv1alpha1.ClusterScopedResource{Spec: schedv1alpha1.ClusterScopedResourceSpec{ResourcesFilter: map[corev1.ResourceName]bool{exMem: false}}}, config.MissingCRPolicyReject, reqPod("a", "n", exMem), true},
		{"requests nothing Accord-specific but cpu not enabled", plugintest.CSR("n"), config.MissingCRPolicyReject, reqPod("a", "n"), true},
		{"cpu enabled", plugintest.CSR("n", corev1.ResourceCPU), config.MissingCRPolicyReject, reqPod("a", "n"), false},
		{"no CR, Reject", nil, config.MissingCRPolicyReject, reqPod("a", "n"), true},
		{"no CR, Ignore", nil, config.MissingCRPolicyIgnore, reqPod("a", "n", exMem), false},
		{"init container request", enabled, config.MissingCRPolicyReject, func() *corev1.Pod {
			p := reqPod("a", "n", exMem)
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{exMem: resource.MustParse("1")}
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"example.com/gpu": resource.MustParse("1")}}}}
			return p
		}(), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, got := Violation(tc.csr, tc.policy, tc.pod, nil)
			if got != tc.want {
				t.Fatalf("violation %v, want %v", got, tc.want)
			}
		})
	}
}

// cluster: n1 enables cpu and example.com/memory, n2 only cpu, n3 has no CR.
func cluster(extra ...runtime.Object) ([]runtime.Object, []runtime.Object) {
	objs := []runtime.Object{node("n1"), node("n2"), node("n3"),
		reqPod("ok-1", "n1", exMem), reqPod("plain-1", "n1"),
		reqPod("bad-2", "n2", exMem), reqPod("plain-2", "n2"),
		reqPod("any-3", "n3", exMem), reqPod("plain-3", "n3"),
	}
	return append(objs, extra...), []runtime.Object{plugintest.CSR("n1", corev1.ResourceCPU, exMem), plugintest.CSR("n2", corev1.ResourceCPU)}
}

// node advertises example.com/memory, as a node must for the scheduler to place a pod requesting it.
func node(name string) *corev1.Node {
	n := fake.Node(name, nil, 8, 16)
	n.Status.Allocatable[exMem] = resource.MustParse("100")
	return n
}

func build(t *testing.T, env *plugintest.Env, args *NodeCRDResourceFitArgs) *Plugin {
	t.Helper()
	args.SetDefaults()
	if errs := args.Validate(field.NewPath("args")); len(errs) > 0 {
		t.Fatal(errs)
	}
	pl, err := New(t.Context(), args, env.Handle())
	if err != nil {
		t.Fatal(err)
	}
	env.Start(t)
	return pl.(*Plugin)
}

func TestDeschedule(t *testing.T) {
	bare := reqPod("bare-2", "n2", exMem)
	bare.OwnerReferences = nil
	other := reqPod("other-2", "n2", exMem)
	other.Namespace, other.UID = "other", "other-uid"
	secondary := reqPod("accord-2", "n2", exMem)
	secondary.Spec.SchedulerName = "accord-scheduler"
	cases := []struct {
		name    string
		args    NodeCRDResourceFitArgs
		evictor *defaultevictor.DefaultEvictorArgs
		extra   []runtime.Object
		want    []string
	}{
		{name: "Reject evicts violators and everything on a node without CR",
			want: []string{"ns/any-3", "ns/bad-2", "ns/plain-3"}},
		{name: "Ignore leaves nodes without CR alone",
			args: NodeCRDResourceFitArgs{MissingCRPolicy: config.MissingCRPolicyIgnore}, want: []string{"ns/bad-2"}},
		{name: "DefaultEvictor protects a bare pod", args: NodeCRDResourceFitArgs{MissingCRPolicy: config.MissingCRPolicyIgnore},
			extra: []runtime.Object{bare}, want: []string{"ns/bad-2"}},
		{name: "DefaultEvictor told to evict bare pods", args: NodeCRDResourceFitArgs{MissingCRPolicy: config.MissingCRPolicyIgnore},
			evictor: &defaultevictor.DefaultEvictorArgs{PodProtections: defaultevictor.PodProtections{DefaultDisabled: []defaultevictor.PodProtection{defaultevictor.BarePods}}},
			extra:   []runtime.Object{bare}, want: []string{"ns/bad-2", "ns/bare-2"}},
		{name: "DefaultEvictor nodeFit keeps a pod that fits nowhere else", args: NodeCRDResourceFitArgs{MissingCRPolicy: config.MissingCRPolicyIgnore},
			evictor: &defaultevictor.DefaultEvictorArgs{NodeFit: true}, extra: []runtime.Object{reqPod("gpu-2", "n2", "example.com/gpu")},
			want: []string{"ns/bad-2"}},
		{name: "namespaces exclude", args: NodeCRDResourceFitArgs{MissingCRPolicy: config.MissingCRPolicyIgnore, Namespaces: &pluginutil.Namespaces{Exclude: []string{"ns"}}},
			extra: []runtime.Object{other}, want: []string{"other/other-2"}},
		{name: "namespaces include", args: NodeCRDResourceFitArgs{MissingCRPolicy: config.MissingCRPolicyIgnore, Namespaces: &pluginutil.Namespaces{Include: []string{"ns"}}},
			extra: []runtime.Object{other}, want: []string{"ns/bad-2"}},
		{name: "schedulerNames", args: NodeCRDResourceFitArgs{SchedulerNames: []string{"accord-scheduler"}},
			extra: []runtime.Object{secondary}, want: []string{"ns/accord-2"}},
		{name: "labelSelector", args: NodeCRDResourceFitArgs{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs, crs := cluster(tc.extra...)
			env := plugintest.New(t, plugintest.Options{DefaultEvictor: tc.evictor, CRs: crs}, objs...)
			pl := build(t, env, &tc.args)
			got := env.Deschedule(t, pl)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("evicted %v, want %v", got, tc.want)
			}
			// A second cycle finds nothing more: everything that violated is gone.
			if again := env.Deschedule(t, pl); len(again) != 0 && len(tc.want) > 0 {
				t.Fatalf("second cycle evicted %v", again)
			}
		})
	}
}

func TestDescheduleHonoursLimits(t *testing.T) {
	objs, crs := cluster()
	one := 1
	env := plugintest.New(t, plugintest.Options{CRs: crs, Limits: evictionsLimits(&one)}, objs...)
	pl := build(t, env, &NodeCRDResourceFitArgs{})
	if got := env.Deschedule(t, pl); len(got) != 1 {
		t.Fatalf("evicted %v with a total limit of 1", got)
	}
}

func TestControllerRechecksOnlyTheChangedNode(t *testing.T) {
	objs, crs := cluster()
	env := plugintest.New(t, plugintest.Options{CRs: crs}, objs...)
	pl := build(t, env, &NodeCRDResourceFitArgs{MissingCRPolicy: config.MissingCRPolicyIgnore})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); pl.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	// An unrelated change (scores only) queues nothing.
	csr := plugintest.CSR("n1", corev1.ResourceCPU, exMem)
	csr.Spec.ResourcesScore = map[corev1.ResourceName]schedv1alpha1.ResourceScore{exMem: 80}
	update(t, env, csr)
	time.Sleep(300 * time.Millisecond)
	if ev := env.Evictions(); len(ev) != 0 {
		t.Fatalf("a score change evicted %v", ev)
	}
	// n1 stops enabling example.com/memory: only ok-1 is evicted, not bad-2 on n2.
	start := time.Now()
	update(t, env, plugintest.CSR("n1", corev1.ResourceCPU))
	for len(env.Evictions()) == 0 {
		if time.Since(start) > time.Second {
			t.Fatal("no eviction within 1s of the CR change")
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if got := env.Evictions(); !slices.Equal(got, []string{"ns/ok-1"}) {
		t.Fatalf("evicted %v, want [ns/ok-1]", got)
	}
}

func TestControllerIgnoresNodesOutsideTheProfile(t *testing.T) {
	const gpu corev1.ResourceName = "example.com/gpu"
	in, out := node("n1"), node("n2")
	in.Labels = map[string]string{"pool": "in"}
	out.Labels = map[string]string{"pool": "out"}
	in.Status.Allocatable[gpu] = resource.MustParse("8")
	objs := []runtime.Object{in, out, reqPod("mem-1", "n1", exMem), reqPod("gpu-1", "n1", gpu), reqPod("mem-2", "n2", exMem)}
	crs := []runtime.Object{plugintest.CSR("n1", corev1.ResourceCPU, exMem, gpu), plugintest.CSR("n2", corev1.ResourceCPU, exMem)}
	env := plugintest.New(t, plugintest.Options{CRs: crs, NodeSelector: labels.SelectorFromSet(labels.Set{"pool": "in"})}, objs...)
	pl := build(t, env, &NodeCRDResourceFitArgs{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); pl.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	waitFor := func(want ...string) {
		t.Helper()
		start := time.Now()
		for len(env.Evictions()) < len(want) && time.Since(start) < 2*time.Second {
			time.Sleep(5 * time.Millisecond)
		}
		if got := env.Evictions(); !slices.Equal(got, want) {
			t.Fatalf("evicted %v, want %v", got, want)
		}
	}
	// n1, inside the profile's nodeSelector, stops enabling example.com/memory: mem-1 goes. The
	// controller's event handler is registered asynchronously and misses changes made before, so
	// the change is repeated (alternating an explicit false, a different resourcesFilter) until
	// the controller acts on it.
	start := time.Now()
	for i := 0; len(env.Evictions()) == 0 && time.Since(start) < 2*time.Second; i++ {
		csr := plugintest.CSR("n1", corev1.ResourceCPU, gpu)
		if i%2 == 1 {
			csr.Spec.ResourcesFilter[exMem] = false
		}
		update(t, env, csr)
		time.Sleep(50 * time.Millisecond)
	}
	waitFor("ns/mem-1")
	// n2 is outside the nodeSelector: the same change there evicts nothing, as a periodic cycle
	// would not either. The next change on n1 is queued after it, so once gpu-1 is evicted n2's
	// change has been handled.
	update(t, env, plugintest.CSR("n2", corev1.ResourceCPU))
	update(t, env, plugintest.CSR("n1", corev1.ResourceCPU))
	waitFor("ns/mem-1", "ns/gpu-1")
	time.Sleep(100 * time.Millisecond)
	waitFor("ns/mem-1", "ns/gpu-1")
	// A periodic cycle agrees: it is given n1 only, and finds nothing left there.
	if got := env.Deschedule(t, pl); len(got) != 0 {
		t.Fatalf("cycle evicted %v", got)
	}
}

func update(t *testing.T, env *plugintest.Env, csr *schedv1alpha1.ClusterScopedResource) {
	t.Helper()
	if _, err := env.Accord.SchedulingV1alpha1().ClusterScopedResources().Update(context.Background(), csr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestControllerEvictsWhenWindowOpens: in event-only mode a node whose violators an eviction window
// holds is retried on the queue's back-off, which reaches its 1000 s cap within the hour before the
// window opens; the window's opening re-queues it at once. On synctest's fake clock (2000-01-01
// 00:00 UTC), a daily 01:00-05:00 window: nothing goes before 01:00, ok-1 goes within a second of it.
func TestControllerEvictsWhenWindowOpens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		objs, crs := cluster()
		env := plugintest.New(t, plugintest.Options{CRs: crs}, objs...)
		windows, errs := evictions.ParseWindows(field.NewPath("evictionWindows"), []descheduler.EvictionWindow{{Start: "01:00", End: "05:00"}})
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		env.Evictor.Windows = windows
		pl := build(t, env, &NodeCRDResourceFitArgs{MissingCRPolicy: config.MissingCRPolicyIgnore})
		ctx, cancel := context.WithCancel(context.Background())
		defer func() { cancel(); synctest.Wait() }()
		// The runner's edge timer (runtime.WatchWindows), as in every mode.
		go windows.WatchEdges(ctx, "test", nil, nil)
		go pl.Run(ctx)
		synctest.Wait()
		start := time.Now()
		opens := time.Date(start.Year(), start.Month(), start.Day(), 1, 0, 0, 0, time.UTC)
		if !start.Before(opens) {
			t.Fatalf("the fake clock starts at %s, after the window opens", start)
		}
		// n1 stops enabling example.com/memory while the window is closed.
		update(t, env, plugintest.CSR("n1", corev1.ResourceCPU))
		time.Sleep(opens.Sub(start) - time.Second)
		synctest.Wait()
		if got := env.Evictions(); len(got) != 0 {
			t.Fatalf("evicted %v before the window opened", got)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if got := env.Evictions(); !slices.Equal(got, []string{"ns/ok-1"}) {
			t.Fatalf("a second after the window opened at %s: evicted %v, want [ns/ok-1]", opens.Format(time.TimeOnly), got)
		}
	})
}

// roomFor stands for SchedulerSimulation: a pod may go only if a node other than its own has a CR
// that offers every resource it requests.
type roomFor struct {
	env *plugintest.Env
}

func (roomFor) Name() string                { return "RoomFor" }
func (roomFor) Filter(pod *corev1.Pod) bool { return true }
func (r roomFor) PreEvictionFilter(pod *corev1.Pod) bool {
	crs, err := r.env.CRs.Scheduling().V1alpha1().ClusterScopedResources().Lister().List(labels.Everything())
	if err != nil {
		return false
	}
	for _, csr := range crs {
		if csr.Name == pod.Spec.NodeName {
			continue
		}
		if _, bad := Violation(csr, config.MissingCRPolicyReject, pod, nil); !bad {
			return true
		}
	}
	return false
}

// TestControllerRetriesHeldNodesWhenACROffersMore: a node whose violator has nowhere to go is held
// on the queue's back-off (which reaches minutes); when another node's CR starts offering what the
// violator requests, the held node is retried at once, not at the end of its back-off.
func TestControllerRetriesHeldNodesWhenACROffersMore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		objs, _ := cluster()
		crs := []runtime.Object{plugintest.CSR("n1", corev1.ResourceCPU, exMem), plugintest.CSR("n2", corev1.ResourceCPU, exMem),
			plugintest.CSR("n3", corev1.ResourceCPU)}
		env := plugintest.New(t, plugintest.Options{CRs: crs}, objs...)
		env.Evictor.PreEvictionFilters = append(env.Evictor.PreEvictionFilters, roomFor{env: env})
		pl := build(t, env, &NodeCRDResourceFitArgs{})
		ctx, cancel := context.WithCancel(context.Background())
		defer func() { cancel(); synctest.Wait() }()
		go pl.Run(ctx)
		synctest.Wait()
		// n1 and n2 stop offering example.com/memory: their pods requesting it (ok-1, bad-2) have
		// nowhere to go, and the nodes are held.
		update(t, env, plugintest.CSR("n1", corev1.ResourceCPU))
		update(t, env, plugintest.CSR("n2", corev1.ResourceCPU))
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if got := env.Evictions(); len(got) != 0 {
			t.Fatalf("evicted %v with nowhere to go", got)
		}
		// n3 starts offering it: both held nodes are retried now (any-3 on n3 now fits).
		update(t, env, plugintest.CSR("n3", corev1.ResourceCPU, exMem))
		synctest.Wait()
		if got := env.Evictions(); !slices.Equal(got, []string{"ns/bad-2", "ns/ok-1"}) && !slices.Equal(got, []string{"ns/ok-1", "ns/bad-2"}) {
			t.Fatalf("at the instant n3 started offering example.com/memory: evicted %v, want ok-1 and bad-2", got)
		}
	})
}
