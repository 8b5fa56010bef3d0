package reliability

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics/testutil"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/evictionapi"
	fwruntime "github.com/accord-sched/accord/pkg/descheduler/framework/runtime"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
	"github.com/accord-sched/accord/test/harness"
)

// evictionPolicy is a policy of named profiles that evict through the Eviction API, with limits high
// enough to stay out of the way; the cases call the profiles' evictors as a cycle's plugins and the
// event-triggered controllers do.
func evictionPolicy(profiles ...string) string {
	body := "maxNoOfPodsToEvictPerNode: 1000\nmaxNoOfPodsToEvictTotal: 1000\nprofiles:\n"
	for _, name := range profiles {
		body += profile(name, "RemoveFailedPods")
	}
	return body
}

// successes sums the descheduler's pods_evicted{result="success"} over the given profiles for a pod.
func successes(d *fwruntime.Descheduler, plugin string, pod *corev1.Pod, profiles ...string) float64 {
	var sum float64
	for _, prof := range profiles {
		v, _ := testutil.GetCounterMetricValue(d.Metrics().PodsEvicted.WithLabelValues(metrics.ResultSuccess, plugin, prof, pod.Namespace, pod.Spec.NodeName))
		sum += v
	}
	return sum
}

// An eviction is decided on a pod the descheduler read from its cache. When that pod was recreated
// under the same name, or is terminating already, by the time the eviction is sent, nothing is
// evicted and nothing is counted.
func TestEvictionOfRecreatedOrTerminatingPod(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, "uid", "n1")
	proxy := newFaultProxy(t)
	d := buildDescheduler(t, c.writePolicy(evictionPolicy("uid")), proxy.config())
	evictor := d.Profiles()[0].Evictor()
	opts := framework.EvictOptions{PluginName: "Reliability", Reason: "test"}

	// Recreated: the descheduler holds the first pod; the apiserver holds its successor.
	stale := c.create(c.newPod("recreated", c.node("n1"), nil))[0]
	if err := env.Client.CoreV1().Pods(c.ns).Delete(ctx, stale.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		_, err := env.Client.CoreV1().Pods(c.ns).Get(ctx, stale.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("pod %s not deleted: %v", stale.Name, err)
	}
	successor := c.create(c.newPod("recreated", c.node("n1"), nil))[0]
	if successor.UID == stale.UID {
		t.Fatalf("successor has the old UID %s", stale.UID)
	}
	if err := evictor.Evict(ctx, stale, opts); !framework.IsPodGone(err) {
		t.Errorf("eviction of the recreated pod's predecessor = %v, want ErrPodGone", err)
	}
	if g, err := gone(ctx, successor); err != nil || g {
		t.Errorf("successor gone=%v (err %v): the eviction of its predecessor hit it", g, err)
	}

	// The apiserver holds the UID precondition the Eviction carries: an eviction sent for the
	// predecessor (as when the pod is replaced between the read-back and the eviction) is a 409.
	err := env.Client.CoreV1().Pods(c.ns).EvictV1(ctx, &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: stale.Name, Namespace: c.ns},
		DeleteOptions: evictionapi.WithUIDPrecondition(nil, stale.UID),
	})
	if !apierrors.IsConflict(err) {
		t.Errorf("eviction with the predecessor's UID precondition = %v, want 409 Conflict", err)
	}
	if g, err := gone(ctx, successor); err != nil || g {
		t.Errorf("successor gone=%v (err %v) after an eviction with a stale UID precondition", g, err)
	}

	// Terminating: a finalizer holds the pod in Terminating after its deletion; the descheduler's copy
	// predates the deletion.
	held := c.newPod("terminating", c.node("n1"), nil)
	held.Finalizers = []string{"test.accord.dev/hold"}
	staleHeld := c.create(held)[0]
	t.Cleanup(func() {
		_, _ = env.Client.CoreV1().Pods(c.ns).Patch(context.Background(), staleHeld.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	if err := env.Client.CoreV1().Pods(c.ns).Delete(ctx, staleHeld.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		return gone(ctx, staleHeld)
	}); err != nil {
		t.Fatalf("pod %s not terminating: %v", staleHeld.Name, err)
	}
	if err := evictor.Evict(ctx, staleHeld, opts); !framework.IsPodGone(err) {
		t.Errorf("eviction of a terminating pod = %v, want ErrPodGone", err)
	}

	accepted := proxy.accepted(c.ns+"/recreated") + proxy.accepted(c.ns+"/terminating")
	counted := successes(d, opts.PluginName, stale, "uid") + successes(d, opts.PluginName, staleHeld, "uid")
	if accepted != 0 || counted != 0 {
		t.Errorf("evictions accepted by the apiserver: %d, counted as success: %v; want 0 and 0", accepted, counted)
	}
	if n := d.Limiter().Total(); n != 0 {
		t.Errorf("limiter counts %d evictions, want 0", n)
	}
	figure(t, "stale_pod_evictions_accepted", "%d of 2 (recreated, terminating; %v counted as success; stale-UID eviction answered 409)", accepted, counted)
}
