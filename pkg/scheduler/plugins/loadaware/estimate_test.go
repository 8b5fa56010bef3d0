package loadaware

import (
	"sync"
	"testing"
	"time"
)

// TestEstimateKeepsOneGeneration: the estimate kept in a node's entry answers only for the
// generation it was stored with and until it stops holding.
func TestEstimateKeepsOneGeneration(t *testing.T) {
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	e := &estimate{}
	e.deltas = e.inline[:2]
	e.generation.Store(-1)
	if _, ok := e.load(0, now, nil); ok {
		t.Fatal("an empty estimate answered")
	}
	e.store(7, now.Add(time.Minute).UnixNano(), []float64{1.5, -2})
	got, ok := e.load(7, now, nil)
	if !ok || len(got) != 2 || got[0] != 1.5 || got[1] != -2 {
		t.Fatalf("load(7) = %v, %v; want [1.5 -2], true", got, ok)
	}
	if _, ok := e.load(8, now, nil); ok {
		t.Error("the estimate of generation 7 answered for generation 8")
	}
	if _, ok := e.load(7, now.Add(time.Minute), nil); ok {
		t.Error("the estimate answered after it stopped holding")
	}
	e.store(8, 0, []float64{3})
	if _, ok := e.load(8, now, nil); ok {
		t.Error("a store of the wrong length was kept")
	}
}

// TestEstimateConcurrentReaders: readers on many goroutines never see a mix of two stores (run
// with -race, which also checks that every access is synchronised).
func TestEstimateConcurrentReaders(t *testing.T) {
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	e := &estimate{}
	e.deltas = e.inline[:4]
	e.generation.Store(-1)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			var buf [4]float64
			for i := range 2000 {
				g := int64(i%50 + w)
				if got, ok := e.load(g, now, buf[:0]); ok {
					for _, d := range got {
						if d != float64(g) {
							t.Errorf("generation %d read deltas %v", g, got)
							return
						}
					}
					continue
				}
				v := float64(g)
				e.store(g, 0, []float64{v, v, v, v})
			}
		})
	}
	wg.Wait()
}
