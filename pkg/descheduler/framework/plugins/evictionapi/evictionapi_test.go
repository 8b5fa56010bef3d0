package evictionapi_test

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
