package evictions

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/component-base/metrics/testutil"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
)

// stubEvict returns err from every Evict.
type stubEvict struct{ err error }

func (s *stubEvict) Name() string { return "Stub" }
func (s *stubEvict) Evict(context.Context, *corev1.Pod, framework.EvictOptions) error {
	return s.err
}

func TestEvictPodAlreadyGone(t *testing.T) {
	notFound := apierrors.NewNotFound(corev1.Resource("pods"), "p")
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"evict plugin returns ErrPodGone", errors.Join(framework.ErrPodGone, notFound)},
		{"evict plugin returns a bare NotFound", notFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			one := 1
			rec := events.NewFakeRecorder(10)
			var records []Record
			e := &ProfileEvictor{
				Profile: "p", EvictPlugin: &stubEvict{err: tc.err},
				Limiter: NewLimiter(Limits{PerNode: &one}), Metrics: metrics.New(),
				Recorder: rec, NotifyFailures: true,
				Observer: func(r Record) { records = append(records, r) },
			}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{NodeName: "n1"}}
			err := e.Evict(context.Background(), pod, framework.EvictOptions{PluginName: "Pl", Reason: "test"})
			if !framework.IsPodGone(err) || !apierrors.IsNotFound(err) {
				t.Fatalf("Evict = %v, want an error wrapping ErrPodGone and the NotFound", err)
			}
			if n := e.Limiter.Total(); n != 0 {
				t.Errorf("limiter counts %d evictions, want the slot released", n)
			}
			// The node's only slot is free again.
			if err := e.Limiter.Reserve("n1", "ns"); err != nil {
				t.Errorf("Reserve after a gone pod: %v", err)
			}
			for _, result := range []string{metrics.ResultError, metrics.ResultSuccess} {
				if v, _ := testutil.GetCounterMetricValue(e.Metrics.PodsEvicted.WithLabelValues(result, "Pl", "p", "ns", "n1")); v != 0 {
					t.Errorf("result=%s counted %v, want 0", result, v)
				}
			}
			if len(rec.Events) != 0 {
				t.Errorf("recorded Event %q for a gone pod", <-rec.Events)
			}
			if len(records) != 1 || !framework.IsPodGone(records[0].Err) {
				t.Errorf("observer saw %+v, want one record with ErrPodGone", records)
			}
		})
	}
}
