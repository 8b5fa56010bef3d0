package evictionapi_test

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/testutil"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/plugintest"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
)

// Two evictions of the same pod race (an event-triggered controller and a periodic cycle): the
// loser gets NotFound from the Eviction API, which is neither a failure nor a success.
func TestEvictionRaceLoserGetsPodGone(t *testing.T) {
	pod := fake.Pod("ns", "p", "n1", 100)
	env := plugintest.New(t, plugintest.Options{}, fake.Node("n1", nil, 4, 8), pod)
	env.Evictor.Metrics = metrics.New()
	env.Start(t)
	ctx := context.Background()
	opts := framework.EvictOptions{PluginName: "Pl", Reason: "test"}
	if err := env.Evictor.Evict(ctx, pod, opts); err != nil {
		t.Fatalf("first eviction: %v", err)
	}
	err := env.Evictor.Evict(ctx, pod, opts)
	if !framework.IsPodGone(err) || !apierrors.IsNotFound(err) {
		t.Fatalf("second eviction = %v, want an error wrapping ErrPodGone and the apiserver's NotFound", err)
	}
	if n := env.Evictor.Limiter.Total(); n != 1 {
		t.Errorf("limiter counts %d evictions, want 1 (the gone pod's slot released)", n)
	}
	for result, want := range map[string]float64{metrics.ResultSuccess: 1, metrics.ResultError: 0} {
		if v, _ := testutil.GetCounterMetricValue(env.Evictor.Metrics.PodsEvicted.WithLabelValues(result, "Pl", "test", "ns", "n1")); v != want {
			t.Errorf("result=%s = %v, want %v", result, v, want)
		}
	}
}

// The Eviction names the pod by UID, so an eviction decided on one pod never lands on its successor.
func TestEvictionCarriesUIDPrecondition(t *testing.T) {
	pod := fake.Pod("ns", "p", "n1", 100)
	env := plugintest.New(t, plugintest.Options{}, fake.Node("n1", nil, 4, 8), pod)
	var got *policyv1.Eviction
	env.RefuseEviction = func(ev *policyv1.Eviction) error { got = ev.DeepCopy(); return nil }
	env.Start(t)
	grace := int64(5)
	if err := env.Evictor.Evict(context.Background(), pod, framework.EvictOptions{PluginName: "Pl", DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: &grace}}); err != nil {
		t.Fatal(err)
	}
	if got == nil || got.DeleteOptions == nil || got.DeleteOptions.Preconditions == nil || got.DeleteOptions.Preconditions.UID == nil {
		t.Fatalf("eviction %+v has no UID precondition", got)
	}
	if *got.DeleteOptions.Preconditions.UID != pod.UID {
		t.Errorf("preconditions.uid = %s, want %s", *got.DeleteOptions.Preconditions.UID, pod.UID)
	}
	if got.DeleteOptions.Preconditions.ResourceVersion != nil {
		t.Errorf("preconditions.resourceVersion = %s, want none", *got.DeleteOptions.Preconditions.ResourceVersion)
	}
	if got.DeleteOptions.GracePeriodSeconds == nil || *got.DeleteOptions.GracePeriodSeconds != 5 {
		t.Errorf("gracePeriodSeconds = %v, want the caller's 5 kept", got.DeleteOptions.GracePeriodSeconds)
	}
}

func TestRecreatedOrTerminatingPodIsNotEvicted(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		name    string
		cluster func(p *corev1.Pod) // what the apiserver holds under the pod's name
	}{
		{"recreated with the same name", func(p *corev1.Pod) { p.UID = "successor" }},
		{"already terminating", func(p *corev1.Pod) { p.DeletionTimestamp = &now }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen := fake.Pod("ns", "p", "n1", 100) // the descheduler's (stale) copy
			inCluster := seen.DeepCopy()
			tc.cluster(inCluster)
			env := plugintest.New(t, plugintest.Options{}, fake.Node("n1", nil, 4, 8), inCluster)
			env.Evictor.Metrics = metrics.New()
			env.Start(t)
			err := env.Evictor.Evict(context.Background(), seen, framework.EvictOptions{PluginName: "Pl", Reason: "test"})
			if !framework.IsPodGone(err) {
				t.Fatalf("Evict = %v, want ErrPodGone", err)
			}
			if ev := env.Evictions(); len(ev) != 0 {
				t.Errorf("evictions posted: %v, want none", ev)
			}
			if n := env.Evictor.Limiter.Total(); n != 0 {
				t.Errorf("limiter counts %d, want 0", n)
			}
			for _, result := range []string{metrics.ResultSuccess, metrics.ResultError} {
				if v, _ := testutil.GetCounterMetricValue(env.Evictor.Metrics.PodsEvicted.WithLabelValues(result, "Pl", "test", "ns", "n1")); v != 0 {
					t.Errorf("result=%s counted %v", result, v)
				}
			}
		})
	}
}

// The pod is replaced between the read-back and the eviction: the apiserver's UID precondition
// answers 409, which is a gone pod, not a failure.
func TestUIDPreconditionConflictIsPodGone(t *testing.T) {
	pod := fake.Pod("ns", "p", "n1", 100)
	env := plugintest.New(t, plugintest.Options{}, fake.Node("n1", nil, 4, 8), pod)
	env.Evictor.Metrics = metrics.New()
	env.RefuseEviction = func(ev *policyv1.Eviction) error {
		return apierrors.NewConflict(corev1.Resource("pods"), ev.Name, errors.New("the UID in the precondition does not match"))
	}
	env.Start(t)
	err := env.Evictor.Evict(context.Background(), pod, framework.EvictOptions{PluginName: "Pl", Reason: "test"})
	if !framework.IsPodGone(err) || !apierrors.IsConflict(err) {
		t.Fatalf("Evict = %v, want ErrPodGone wrapping the Conflict", err)
	}
	if v, _ := testutil.GetCounterMetricValue(env.Evictor.Metrics.PodsEvicted.WithLabelValues(metrics.ResultSuccess, "Pl", "test", "ns", "n1")); v != 0 {
		t.Errorf("success counted %v", v)
	}
}
