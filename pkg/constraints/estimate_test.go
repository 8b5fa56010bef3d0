package constraints

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
)

func estPod(name, req, limit string, assigned *time.Time) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	c := corev1.Container{Name: "c"}
	if req != "" {
		c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(req)}
	}
	if limit != "" {
		c.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(limit)}
	}
	p.Spec.Containers = []corev1.Container{c}
	if assigned != nil {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(*assigned)}}
	}
	return p
}

func TestUsageEstimator(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	updated := now.Add(-10 * time.Second)
	old := now.Add(-time.Hour)
	justNow := now.Add(-2 * time.Second)
	inWindow := updated.Add(-2 * time.Second) // within the 5 s window before the report
	interval := int64(5)
	metric := &slov1alpha1.NodeMetric{
		ObjectMeta: metav1.ObjectMeta{Name: "n"},
		Spec:       slov1alpha1.NodeMetricSpec{ReportIntervalSeconds: &interval},
		Status: slov1alpha1.NodeMetricStatus{
			UpdateTime: &metav1.Time{Time: updated},
			NodeUsage:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("1Gi")},
			PodsUsage: []slov1alpha1.PodUsage{
				{Namespace: "ns", Name: "steady", Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
				{Namespace: "ns", Name: "evicted", Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}},
				{Namespace: "ns", Name: "starting", Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
				{Namespace: "ns", Name: "gone", Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}},
			},
		},
	}
	evicted := estPod("evicted", "1", "", &old)
	evicted.DeletionTimestamp = &metav1.Time{Time: now}
	annotated := estPod("annotated", "100m", "", &justNow)
	annotated.Annotations = map[string]string{EstimatedUsageAnnotation: `{"cpu":"800m"}`}
	pods := []*corev1.Pod{
		estPod("steady", "2", "", &old),        // in the report, assigned long ago: reported usage stands
		evicted,                                // terminating: its 1500m go
		estPod("starting", "1", "", &inWindow), // in the report but assigned in its window: max(850m, 100m)
		estPod("new", "100m", "1", &justNow),   // not in the report: 85% of its 1 CPU limit
		estPod("assumed", "", "", nil),         // not bound yet, no requests: 85% of 250m
		annotated,                              // its annotation: 800m
	}
	est := NewUsageEstimator([]ResourceFactor{{Name: corev1.ResourceCPU, Percent: 85}, {Name: corev1.ResourceMemory, Percent: 0}}, 0)
	l := NewLoad(metric)
	adj := est.Adjust(l, nil, len(pods), func(i int) *corev1.Pod { return pods[i] }, now)
	// -1.5 (evicted) -0.5 (gone) + (0.85-0.1) + 0.85 + 0.2125 + 0.8, each in whole thousandths
	// (212.5m rounds to 213m)
	want := -1.5 - 0.5 + 0.75 + 0.85 + 0.213 + 0.8
	if got := adj.Delta(corev1.ResourceCPU); got < want-1e-9 || got > want+1e-9 {
		t.Errorf("cpu delta = %v, want %v", got, want)
	}
	if got := adj.Delta(corev1.ResourceMemory); got != 0 {
		t.Errorf("memory is not estimated (factor 0), delta = %v", got)
	}
	if adj.Estimated != 4 || adj.Departed != 2 {
		t.Errorf("estimated %d, departed %d; want 4 and 2", adj.Estimated, adj.Departed)
	}
	if got, _ := l.EstimatedUsage(corev1.ResourceCPU, &adj); got < 4+want-1e-9 || got > 4+want+1e-9 {
		t.Errorf("estimated cpu = %v, want %v", got, 4+want)
	}
	if !adj.ValidAt(now.Add(time.Hour)) {
		t.Error("without forceAfterScheduled the adjustment does not expire")
	}

	// The order of the pods does not change the sum (the two binaries list them differently).
	rev := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		rev[len(pods)-1-i] = p
	}
	if r := est.Adjust(l, nil, len(rev), func(i int) *corev1.Pod { return rev[i] }, now); r.Delta(corev1.ResourceCPU) != adj.Delta(corev1.ResourceCPU) {
		t.Errorf("reversed order: %v, want %v", r.Delta(corev1.ResourceCPU), adj.Delta(corev1.ResourceCPU))
	}

	// forceAfterScheduled: "steady", assigned an hour ago, is forced within 2 h; max(1.7, 1) counts.
	forced := NewUsageEstimator([]ResourceFactor{{Name: corev1.ResourceCPU, Percent: 85}}, 2*time.Hour)
	f := forced.Adjust(l, nil, 1, func(int) *corev1.Pod { return pods[0] }, now)
	// 1.7 - 1 for steady, minus 1.5 + 0.5 + 0.1 for the three reported pods not in the list
	if got, want := f.Delta(corev1.ResourceCPU), 0.7-2.1; got < want-1e-9 || got > want+1e-9 {
		t.Errorf("forced delta = %v, want %v", got, want)
	}
	if f.ValidAt(now.Add(time.Hour)) {
		t.Error("the forced estimate must expire when steady's period ends")
	}

	// Off: no factors, no estimator, no change.
	if NewUsageEstimator(nil, time.Minute) != nil {
		t.Fatal("an estimator without factors must be nil")
	}
	var off *UsageEstimator
	if a := off.Adjust(l, nil, len(pods), func(i int) *corev1.Pod { return pods[i] }, now); a.Delta(corev1.ResourceCPU) != 0 {
		t.Error("a nil estimator changed the usage")
	}

	// The check both binaries make: 4 - 0.3 + ... on 8 CPU with an 80% threshold.
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}
	th := []ResourceThreshold{{Name: corev1.ResourceCPU, Percent: 60}}
	if c := CheckLoadEstimated(metric, alloc, th, est, pods, now, 0); c.Overloaded {
		t.Errorf("4.613 of 8 CPU is under 60%%: %+v", c)
	}
	more := append([]*corev1.Pod{}, pods...)
	for i := range 3 {
		more = append(more, estPod("burst"+string(rune('a'+i)), "100m", "1", &justNow))
	}
	if c := CheckLoadEstimated(metric, alloc, th, est, more, now, 0); !c.Overloaded || c.UsagePercent != 89 {
		t.Errorf("with three more pods (7.163 of 8 CPU) the node is over 60%%: %+v", c)
	}
	if c := CheckLoad(metric, alloc, th, now, 0); c.Overloaded {
		t.Errorf("the reported usage alone (4 of 8) is under: %+v", c)
	}
}

func TestParseEstimatedUsage(t *testing.T) {
	if _, err := ParseEstimatedUsage(`{"cpu":"-1"}`); err == nil {
		t.Error("a negative quantity must be rejected")
	}
	if _, err := ParseEstimatedUsage(`{"cpu":"lots"}`); err == nil {
		t.Error("a bad quantity must be rejected")
	}
	l, err := ParseEstimatedUsage(`{"cpu":"800m","memory":"256Mi"}`)
	if err != nil || l.Cpu().MilliValue() != 800 || l.Memory().Value() != 256<<20 {
		t.Errorf("got %v, %v", l, err)
	}
}
