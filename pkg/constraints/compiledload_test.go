package constraints

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
)

// specCheck and specScore state the load rules directly on the NodeMetric (its usage map and update
// time), as the package documentation words them: the oracle the one implementation (NodeLoad) and
// the functions derived from it (CheckLoad, LoadScore) are held to.
func specCheck(m *slov1alpha1.NodeMetric, alloc corev1.ResourceList, th []ResourceThreshold, now time.Time, maxAge time.Duration) LoadCheck {
	if m == nil || m.Status.UpdateTime == nil || (maxAge > 0 && now.Sub(m.Status.UpdateTime.Time) > maxAge) {
		return LoadCheck{Stale: true}
	}
	for _, t := range th {
		u, hasUsage := m.Status.NodeUsage[t.Name]
		a, hasAlloc := alloc[t.Name]
		if t.Percent <= 0 || !hasUsage || !hasAlloc || a.AsApproximateFloat64() <= 0 {
			continue
		}
		if pct := u.AsApproximateFloat64() * 100 / a.AsApproximateFloat64(); pct > float64(t.Percent) {
			return LoadCheck{Overloaded: true, Resource: t.Name, UsagePercent: int64(pct), ThresholdPercent: t.Percent}
		}
	}
	return LoadCheck{}
}

func specScore(m *slov1alpha1.NodeMetric, alloc, pod corev1.ResourceList, w []ResourceWeight, now time.Time, maxAge time.Duration) int64 {
	if specCheck(m, nil, nil, now, maxAge).Stale {
		return NeutralLoadScore
	}
	var sum, total int64
	for _, rw := range w {
		a, ok := alloc[rw.Name]
		if rw.Weight <= 0 || !ok || a.AsApproximateFloat64() <= 0 {
			continue
		}
		u, r := m.Status.NodeUsage[rw.Name], pod[rw.Name]
		free := int64((a.AsApproximateFloat64() - u.AsApproximateFloat64() - r.AsApproximateFloat64()) * 100 / a.AsApproximateFloat64())
		sum += rw.Weight * min(max(free, 0), MaxLoadScore)
		total += rw.Weight
	}
	if total == 0 {
		return NeutralLoadScore
	}
	return sum / total
}

// TestLoadFormsAgreeWithSpec checks NodeLoad (the one definition) and CheckLoad, LoadScore and
// MetricFresh (derived from it) against the spec on every combination of metrics, allocatables,
// thresholds, weights and pods below.
func TestLoadFormsAgreeWithSpec(t *testing.T) {
	noTime := metric(0, rl("cpu", "1"))
	noTime.Status.UpdateTime = nil
	metrics := []*slov1alpha1.NodeMetric{
		nil,
		noTime,
		metric(time.Second, nil),
		metric(time.Second, rl("cpu", "0", "memory", "0")),
		metric(time.Second, rl("cpu", "2", "memory", "8Gi")),
		metric(time.Second, rl("cpu", "3800m", "memory", "15Gi", "example.com/gpu", "1")),
		metric(time.Hour, rl("cpu", "4")),
		metric(time.Second, rl("cpu", "6", "memory", "20Gi")),
		metric(-time.Minute, rl("cpu", "3")),
	}
	allocs := []corev1.ResourceList{rl("cpu", "4", "memory", "16Gi"), rl("cpu", "4"), nil, rl("cpu", "0", "memory", "1Gi")}
	thresholds := [][]ResourceThreshold{
		nil,
		{{Name: "cpu", Percent: 80}, {Name: "memory", Percent: 80}},
		{{Name: "memory", Percent: 50}},
		{{Name: "cpu", Percent: 0}, {Name: "example.com/gpu", Percent: 10}},
	}
	weights := [][]ResourceWeight{
		nil,
		{{Name: "cpu", Weight: 1}, {Name: "memory", Weight: 1}},
		{{Name: "cpu", Weight: 3}, {Name: "memory", Weight: 0}},
		{{Name: "example.com/gpu", Weight: 1}},
	}
	pods := []corev1.ResourceList{nil, rl("cpu", "500m", "memory", "1Gi"), rl("cpu", "8")}
	for _, maxAge := range []time.Duration{0, time.Minute} {
		for mi, m := range metrics {
			wantFresh := !specCheck(m, nil, nil, now, maxAge).Stale
			if got := MetricFresh(m, now, maxAge); got != wantFresh {
				t.Errorf("metric %d: MetricFresh = %v, want %v", mi, got, wantFresh)
			}
			if got := NewLoad(m).Fresh(now, maxAge); got != wantFresh {
				t.Errorf("metric %d: Load.Fresh = %v, want %v", mi, got, wantFresh)
			}
			for ai, a := range allocs {
				for ti, th := range thresholds {
					want := specCheck(m, a, th, now, maxAge)
					if got := CheckLoad(m, a, th, now, maxAge); got != want {
						t.Errorf("metric %d, alloc %d, thresholds %d: CheckLoad = %+v, want %+v", mi, ai, ti, got, want)
					}
					for wi, w := range weights {
						nl := NewNodeLoad(NewLoad(m), a, th, w)
						if got := nl.Check(now, maxAge); got != want {
							t.Errorf("metric %d, alloc %d, thresholds %d, weights %d: NodeLoad.Check = %+v, want %+v", mi, ai, ti, wi, got, want)
						}
						if got := nl.Fresh(now, maxAge); got != wantFresh {
							t.Errorf("metric %d: NodeLoad.Fresh = %v, want %v", mi, got, wantFresh)
						}
						for pi, p := range pods {
							wantScore := specScore(m, a, p, w, now, maxAge)
							if got := LoadScore(m, a, p, w, now, maxAge); got != wantScore {
								t.Errorf("metric %d, alloc %d, weights %d, pod %d: LoadScore = %d, want %d", mi, ai, wi, pi, got, wantScore)
							}
							if got := nl.Score(AlignRequests(p, w), now, maxAge); got != wantScore {
								t.Errorf("metric %d, alloc %d, thresholds %d, weights %d, pod %d: NodeLoad.Score = %d, want %d", mi, ai, ti, wi, pi, got, wantScore)
							}
						}
					}
				}
			}
		}
	}
}

// TestNodeLoadExpiresAfterCompiling: a NodeLoad built while its metric was fresh judges freshness at
// each call, so the metric expiring later (with no event) makes it stale, as CheckLoad does.
func TestNodeLoadExpiresAfterCompiling(t *testing.T) {
	m := metric(time.Second, rl("cpu", "4"))
	alloc := rl("cpu", "4")
	th := []ResourceThreshold{{Name: "cpu", Percent: 80}}
	w := []ResourceWeight{{Name: "cpu", Weight: 1}}
	nl := NewNodeLoad(NewLoad(m), alloc, th, w)
	if c := nl.Check(now, time.Minute); !c.Overloaded {
		t.Fatalf("fresh: Check = %+v, want overloaded", c)
	}
	later := now.Add(time.Minute)
	if got, want := nl.Check(later, time.Minute), CheckLoad(m, alloc, th, later, time.Minute); got != want || !got.Stale {
		t.Fatalf("expired: Check = %+v, CheckLoad = %+v, want stale", got, want)
	}
	if got := nl.Score(nil, later, time.Minute); got != NeutralLoadScore {
		t.Fatalf("expired: Score = %d, want %d", got, NeutralLoadScore)
	}
	if NewNodeLoad(nil, alloc, th, w) != nil {
		t.Fatal("a missing metric compiled to a non-nil NodeLoad")
	}
}

func BenchmarkNodeLoad(b *testing.B) {
	alloc := rl("cpu", "4", "memory", "16Gi")
	th := []ResourceThreshold{{Name: "cpu", Percent: 80}, {Name: "memory", Percent: 80}}
	w := []ResourceWeight{{Name: "cpu", Weight: 1}, {Name: "memory", Weight: 1}}
	nl := NewNodeLoad(NewLoad(metric(time.Second, rl("cpu", "2", "memory", "8Gi"))), alloc, th, w)
	pod := AlignRequests(rl("cpu", "500m", "memory", "1Gi"), w)
	var sink int64
	fn := func() {
		if !nl.Check(now, time.Minute).Overloaded {
			sink += nl.Score(pod, now, time.Minute)
		}
	}
	assertZeroAllocs(b, fn)
	b.ReportAllocs()
	for b.Loop() {
		fn()
	}
	_ = sink
}
