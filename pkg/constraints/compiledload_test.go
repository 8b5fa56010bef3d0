package constraints

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
)

// TestLoadAgreesWithMetric checks the compiled Load against CheckLoad, LoadScore and MetricFresh on
// the NodeMetric itself.
func TestLoadAgreesWithMetric(t *testing.T) {
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
	}
	allocs := []corev1.ResourceList{rl("cpu", "4", "memory", "16Gi"), rl("cpu", "4"), nil, rl("cpu", "0", "memory", "1Gi")}
	thresholds := [][]ResourceThreshold{
		{{Name: "cpu", Percent: 80}, {Name: "memory", Percent: 80}},
		{{Name: "memory", Percent: 50}},
		{{Name: "cpu", Percent: 0}, {Name: "example.com/gpu", Percent: 10}},
	}
	weights := [][]ResourceWeight{
		{{Name: "cpu", Weight: 1}, {Name: "memory", Weight: 1}},
		{{Name: "cpu", Weight: 3}, {Name: "memory", Weight: 0}},
		{{Name: "example.com/gpu", Weight: 1}},
	}
	pods := []corev1.ResourceList{nil, rl("cpu", "500m", "memory", "1Gi")}
	for _, maxAge := range []time.Duration{0, time.Minute} {
		for mi, m := range metrics {
			l := NewLoad(m)
			if got, want := l.Fresh(now, maxAge), MetricFresh(m, now, maxAge); got != want {
				t.Errorf("metric %d: Fresh = %v, MetricFresh = %v", mi, got, want)
			}
			for ai, a := range allocs {
				for ti, th := range thresholds {
					if got, want := l.Check(a, th, now, maxAge), CheckLoad(m, a, th, now, maxAge); got != want {
						t.Errorf("metric %d, alloc %d, thresholds %d: Check = %+v, CheckLoad = %+v", mi, ai, ti, got, want)
					}
				}
				for wi, w := range weights {
					for pi, p := range pods {
						want := LoadScore(m, a, p, w, now, maxAge)
						if got := l.Score(a, AlignRequests(p, w), w, now, maxAge); got != want {
							t.Errorf("metric %d, alloc %d, weights %d, pod %d: Score = %d, LoadScore = %d", mi, ai, wi, pi, got, want)
						}
						for ti, th := range thresholds {
							nl := NewNodeLoad(l, a, th, w)
							if got := nl.Score(AlignRequests(p, w), now, maxAge); got != want {
								t.Errorf("metric %d, alloc %d, thresholds %d, weights %d, pod %d: NodeLoad.Score = %d, LoadScore = %d", mi, ai, ti, wi, pi, got, want)
							}
							if got, want := nl.Check(now, maxAge), CheckLoad(m, a, th, now, maxAge); got != want {
								t.Errorf("metric %d, alloc %d, thresholds %d, weights %d: NodeLoad.Check = %+v, CheckLoad = %+v", mi, ai, ti, wi, got, want)
							}
							if got, want := nl.Fresh(now, maxAge), MetricFresh(m, now, maxAge); got != want {
								t.Errorf("metric %d: NodeLoad.Fresh = %v, MetricFresh = %v", mi, got, want)
							}
						}
					}
				}
			}
		}
	}
}

func BenchmarkCompiledLoad(b *testing.B) {
	alloc := rl("cpu", "4", "memory", "16Gi")
	l := NewLoad(metric(time.Second, rl("cpu", "2", "memory", "8Gi")))
	th := []ResourceThreshold{{Name: "cpu", Percent: 80}, {Name: "memory", Percent: 80}}
	w := []ResourceWeight{{Name: "cpu", Weight: 1}, {Name: "memory", Weight: 1}}
	pod := AlignRequests(rl("cpu", "500m", "memory", "1Gi"), w)
	var sink int64
	fn := func() {
		if !l.Check(alloc, th, now, time.Minute).Overloaded {
			sink += l.Score(alloc, pod, w, now, time.Minute)
		}
	}
	assertZeroAllocs(b, fn)
	b.ReportAllocs()
	for b.Loop() {
		fn()
	}
	_ = sink
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
