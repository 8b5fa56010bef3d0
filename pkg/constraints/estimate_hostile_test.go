package constraints

import (
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
)

// hostileNode is an 8 CPU / 8Gi node reported at 4 CPU and 4Gi (50%), its metric updated 10 s ago.
func hostileNode(now time.Time) (*slov1alpha1.NodeMetric, corev1.ResourceList) {
	interval := int64(5)
	return &slov1alpha1.NodeMetric{
		ObjectMeta: metav1.ObjectMeta{Name: "n"},
		Spec:       slov1alpha1.NodeMetricSpec{ReportIntervalSeconds: &interval},
		Status: slov1alpha1.NodeMetricStatus{UpdateTime: &metav1.Time{Time: now.Add(-10 * time.Second)},
			NodeUsage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("4Gi")}},
	}, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("8Gi")}
}

// TestHugeLimitNeitherEmptiesNorFillsItsNode: a pod placed since the report with limits.memory 100Pi
// (and 100Pi of CPU) counts as its request × factor, so its node at 50% stays near 50% in the check
// both binaries make (LowNodeLoad's, and LoadAware's Filter on the estimated usage), neither empty
// (the int64 overflow) nor over its threshold. An annotation above the node's allocatable counts as
// the allocatable, reported once however often the estimate is computed.
func TestHugeLimitNeitherEmptiesNorFillsItsNode(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	metric, alloc := hostileNode(now)
	justNow := now.Add(-time.Second)
	hostile := estPod("hostile", "100m", "", &justNow)
	hostile.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("100Mi")
	hostile.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100Pi"), corev1.ResourceMemory: resource.MustParse("100Pi")}
	var reports int
	est := NewUsageEstimator([]ResourceFactor{{Name: corev1.ResourceCPU, Percent: 85}, {Name: corev1.ResourceMemory, Percent: 70}}, 0).
		OnAnnotationClamped(func(*corev1.Pod, corev1.ResourceName, float64, float64) { reports++ })
	th := []ResourceThreshold{{Name: corev1.ResourceCPU, Percent: 80}, {Name: corev1.ResourceMemory, Percent: 80}}
	pods := []*corev1.Pod{hostile}
	l := NewLoad(metric)
	adj := est.Adjust(l, alloc, 1, func(int) *corev1.Pod { return hostile }, now)
	mem, _ := l.EstimatedUsage(corev1.ResourceMemory, &adj)
	cpu, _ := l.EstimatedUsage(corev1.ResourceCPU, &adj)
	wantMem, wantCPU := 4*float64(1<<30)+0.7*100*float64(1<<20), 4+0.085
	if math.Abs(mem-wantMem) > 1 || math.Abs(cpu-wantCPU) > 1e-9 {
		t.Errorf("estimated usage cpu %v, memory %v; want %v and %v (the requests × factor)", cpu, mem, wantCPU, wantMem)
	}
	if c := CheckLoadEstimated(metric, alloc, th, est, pods, now, 0); c.Overloaded {
		t.Errorf("the node with the 100Pi-limit pod is over 80%%: %+v", c)
	}
	// Not empty either: over a 45% threshold it is 50% (memory: 4Gi + 70Mi of 8Gi).
	low := []ResourceThreshold{{Name: corev1.ResourceMemory, Percent: 45}}
	if c := CheckLoadEstimated(metric, alloc, low, est, pods, now, 0); !c.Overloaded || c.UsagePercent != 50 {
		t.Errorf("the node with the 100Pi-limit pod against 45%%: %+v; want overloaded at 50%%", c)
	}

	// The annotation claims 100Pi of memory: it counts as the node's 8Gi, reported once.
	hostile.Annotations = map[string]string{EstimatedUsageAnnotation: `{"memory":"100Pi","cpu":"-1"}`}
	for range 3 {
		adj = est.Adjust(l, alloc, 1, func(int) *corev1.Pod { return hostile }, now)
	}
	// A negative quantity makes the annotation unreadable: ignored as a whole.
	if mem, _ := l.EstimatedUsage(corev1.ResourceMemory, &adj); mem != wantMem || reports != 0 {
		t.Errorf("an unreadable annotation changed the estimate: %v (reports %d)", mem, reports)
	}
	hostile.Annotations = map[string]string{EstimatedUsageAnnotation: `{"memory":"100Pi"}`}
	for range 3 {
		adj = est.Adjust(l, alloc, 1, func(int) *corev1.Pod { return hostile }, now)
	}
	if mem, _ := l.EstimatedUsage(corev1.ResourceMemory, &adj); mem != 12*float64(1<<30) {
		t.Errorf("memory with a 100Pi annotation = %v, want the reported 4Gi + the node's 8Gi", mem)
	}
	if reports != 1 {
		t.Errorf("the clamped annotation was reported %d times in 3 estimates, want once", reports)
	}
}

// TestAdjustmentSaturates: sums beyond the int64 range of thousandths stop at its bounds.
func TestAdjustmentSaturates(t *testing.T) {
	var a Adjustment
	huge := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100Ei")}
	for range 3 {
		a.Move(huge, 1)
	}
	if got := a.Delta(corev1.ResourceMemory); got != float64(math.MaxInt64)/1000 {
		t.Errorf("three moves of 100Ei: %v, want the saturated %v", got, float64(math.MaxInt64)/1000)
	}
	var b Adjustment
	for range 3 {
		b.Move(huge, -1)
	}
	if got := b.Delta(corev1.ResourceMemory); got != float64(math.MinInt64)/1000 {
		t.Errorf("three moves of -100Ei: %v, want the saturated %v", got, float64(math.MinInt64)/1000)
	}
	if toMilli(math.NaN()) != 0 || toMilli(math.Inf(1)) != math.MaxInt64 || toMilli(math.Inf(-1)) != math.MinInt64 {
		t.Error("toMilli of NaN or ±Inf is not 0 or saturated")
	}
}

// FuzzUsageEstimator estimates a node's usage for a hostile pod: any requests, limits and
// estimated-usage annotation (huge, negative, malformed quantities). The estimator must not panic,
// the pod's part of the estimate must be within [0, the node's allocatable] for each estimated
// resource, and the result must not depend on how often it is computed.
func FuzzUsageEstimator(f *testing.F) {
	f.Add("100Mi", "100Pi", "100m", "100Pi", `{"memory":"100Pi"}`, int64(70))
	f.Add("1", "2", "-1", "1e30", `{"cpu":"-5"}`, int64(85))
	f.Add("", "", "", "", `not json`, int64(100))
	f.Add("9223372036854775807", "9e18", "1Ei", "8Ei", `{"cpu":"1e300","memory":"0.000001"}`, int64(1))
	f.Add("0", "0", "0", "0", `{}`, int64(0))
	f.Fuzz(func(t *testing.T, memReq, memLim, cpuReq, cpuLim, annotation string, percent int64) {
		now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
		metric, alloc := hostileNode(now)
		justNow := now.Add(-time.Second)
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u", Annotations: map[string]string{EstimatedUsageAnnotation: annotation}}}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(justNow)}}
		c := corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}}
		for _, q := range []struct {
			l    corev1.ResourceList
			name corev1.ResourceName
			v    string
		}{{c.Resources.Requests, corev1.ResourceMemory, memReq}, {c.Resources.Limits, corev1.ResourceMemory, memLim},
			{c.Resources.Requests, corev1.ResourceCPU, cpuReq}, {c.Resources.Limits, corev1.ResourceCPU, cpuLim}} {
			if v, err := resource.ParseQuantity(q.v); err == nil {
				q.l[q.name] = v
			}
		}
		p.Spec.Containers = []corev1.Container{c}
		// Factors are validated to 1..100 by both binaries' args; the estimator must hold within
		// them, and not break beyond.
		factors := []ResourceFactor{{Name: corev1.ResourceCPU, Percent: percent}, {Name: corev1.ResourceMemory, Percent: percent}}
		est := NewUsageEstimator(factors, time.Minute).OnAnnotationClamped(func(*corev1.Pod, corev1.ResourceName, float64, float64) {})
		l := NewLoad(metric)
		adj := est.Adjust(l, alloc, 1, func(int) *corev1.Pod { return p }, now)
		again := est.Adjust(l, alloc, 1, func(int) *corev1.Pod { return p }, now)
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			d := adj.Delta(name)
			if d != again.Delta(name) {
				t.Fatalf("%s: %v then %v for the same pod", name, d, again.Delta(name))
			}
			limit := alloc[name]
			if percent > 0 && percent <= 100 && (d < 0 || d > limit.AsApproximateFloat64()+0.001) {
				t.Fatalf("%s: the pod adds %v to a node of %v (factor %d%%)", name, d, limit.AsApproximateFloat64(), percent)
			}
			if v, ok := l.EstimatedUsage(name, &adj); ok && (v != v || math.IsInf(v, 0)) {
				t.Fatalf("%s: estimated usage %v", name, v)
			}
		}
		CheckLoadEstimated(metric, alloc, []ResourceThreshold{{Name: corev1.ResourceMemory, Percent: 80}}, est, []*corev1.Pod{p}, now, 0)
	})
}
