package constraints

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
)

var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func metric(age time.Duration, usage corev1.ResourceList) *slov1alpha1.NodeMetric {
	ts := metav1.NewTime(now.Add(-age))
	return &slov1alpha1.NodeMetric{
		ObjectMeta: metav1.ObjectMeta{Name: "n"},
		Status:     slov1alpha1.NodeMetricStatus{UpdateTime: &ts, NodeUsage: usage},
	}
}

func TestMetricFresh(t *testing.T) {
	noTime := metric(0, nil)
	noTime.Status.UpdateTime = nil
	tests := []struct {
		name   string
		metric *slov1alpha1.NodeMetric
		maxAge time.Duration
		want   bool
	}{
		{name: "missing", metric: nil, maxAge: time.Minute, want: false},
		{name: "never updated", metric: noTime, maxAge: time.Minute, want: false},
		{name: "recent", metric: metric(10*time.Second, nil), maxAge: time.Minute, want: true},
		{name: "exactly max age", metric: metric(time.Minute, nil), maxAge: time.Minute, want: true},
		{name: "expired", metric: metric(time.Minute+time.Second, nil), maxAge: time.Minute, want: false},
		{name: "future (clock skew)", metric: metric(-time.Minute, nil), maxAge: time.Minute, want: true},
		{name: "no expiry", metric: metric(1000*time.Hour, nil), maxAge: 0, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MetricFresh(tt.metric, now, tt.maxAge); got != tt.want {
				t.Fatalf("MetricFresh = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCheckLoad(t *testing.T) {
	alloc := rl("cpu", "4", "memory", "16Gi")
	th := []ResourceThreshold{{Name: "cpu", Percent: 80}, {Name: "memory", Percent: 80}}
	tests := []struct {
		name       string
		metric     *slov1alpha1.NodeMetric
		thresholds []ResourceThreshold
		want       LoadCheck
	}{
		{name: "under", metric: metric(time.Second, rl("cpu", "2", "memory", "8Gi")), thresholds: th, want: LoadCheck{}},
		{name: "exactly at threshold is not over", metric: metric(time.Second, rl("cpu", "3200m")), thresholds: th, want: LoadCheck{}},
		{name: "cpu over", metric: metric(time.Second, rl("cpu", "3800m", "memory", "1Gi")), thresholds: th,
			want: LoadCheck{Overloaded: true, Resource: "cpu", UsagePercent: 95, ThresholdPercent: 80}},
		{name: "memory over", metric: metric(time.Second, rl("cpu", "1", "memory", "15Gi")), thresholds: th,
			want: LoadCheck{Overloaded: true, Resource: "memory", UsagePercent: 93, ThresholdPercent: 80}},
		{name: "first over in threshold order", metric: metric(time.Second, rl("cpu", "4", "memory", "16Gi")), thresholds: th,
			want: LoadCheck{Overloaded: true, Resource: "cpu", UsagePercent: 100, ThresholdPercent: 80}},
		{name: "disabled threshold", metric: metric(time.Second, rl("cpu", "4")), thresholds: []ResourceThreshold{{Name: "cpu", Percent: 0}}, want: LoadCheck{}},
		{name: "no allocatable for resource", metric: metric(time.Second, rl("example.com/gpu", "4")), thresholds: []ResourceThreshold{{Name: "example.com/gpu", Percent: 10}}, want: LoadCheck{}},
		{name: "no usage for resource", metric: metric(time.Second, rl("memory", "1Gi")), thresholds: th, want: LoadCheck{}},
		{name: "expired metric never rejects", metric: metric(time.Hour, rl("cpu", "4")), thresholds: th, want: LoadCheck{Stale: true}},
		{name: "missing metric never rejects", metric: nil, thresholds: th, want: LoadCheck{Stale: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CheckLoad(tt.metric, alloc, tt.thresholds, now, 3*time.Minute); got != tt.want {
				t.Fatalf("CheckLoad = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestLoadScore(t *testing.T) {
	alloc := rl("cpu", "4", "memory", "16Gi")
	w := []ResourceWeight{{Name: "cpu", Weight: 1}, {Name: "memory", Weight: 1}}
	tests := []struct {
		name    string
		metric  *slov1alpha1.NodeMetric
		pod     corev1.ResourceList
		weights []ResourceWeight
		want    int64
	}{
		{name: "idle", metric: metric(time.Second, rl("cpu", "0", "memory", "0")), weights: w, want: 100},
		{name: "half used", metric: metric(time.Second, rl("cpu", "2", "memory", "8Gi")), weights: w, want: 50},
		{name: "pod request counts", metric: metric(time.Second, rl("cpu", "1", "memory", "4Gi")), pod: rl("cpu", "1", "memory", "4Gi"), weights: w, want: 50},
		{name: "weights", metric: metric(time.Second, rl("cpu", "4", "memory", "0")), weights: []ResourceWeight{{Name: "cpu", Weight: 3}, {Name: "memory", Weight: 1}}, want: 25},
		{name: "overcommitted clamps to 0", metric: metric(time.Second, rl("cpu", "6", "memory", "20Gi")), weights: w, want: 0},
		{name: "zero weight ignored", metric: metric(time.Second, rl("cpu", "4", "memory", "0")), weights: []ResourceWeight{{Name: "cpu", Weight: 0}, {Name: "memory", Weight: 2}}, want: 100},
		{name: "no usable weights is neutral", metric: metric(time.Second, rl("cpu", "4")), weights: []ResourceWeight{{Name: "example.com/gpu", Weight: 1}}, want: NeutralLoadScore},
		{name: "expired is neutral", metric: metric(time.Hour, rl("cpu", "0")), weights: w, want: NeutralLoadScore},
		{name: "missing is neutral", metric: nil, weights: w, want: NeutralLoadScore},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LoadScore(tt.metric, alloc, tt.pod, tt.weights, now, 3*time.Minute); got != tt.want {
				t.Fatalf("LoadScore = %d, want %d", got, tt.want)
			}
		})
	}
}
