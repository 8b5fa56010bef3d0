package runtime_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"k8s.io/component-base/metrics/testutil"

	"github.com/accord-sched/accord/pkg/descheduler/cachegate"
	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins"
	fwruntime "github.com/accord-sched/accord/pkg/descheduler/framework/runtime"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
	"github.com/accord-sched/accord/pkg/descheduler/policy"
)

// gated is a descheduler of one profile (plugin D1, recorded) whose CacheGate's probe fails while
// down is true; changes collects what OnCachesStale was told.
type gated struct {
	d       *fwruntime.Descheduler
	rec     *recorder
	down    bool
	changes [][]string
}

func newGated(t *testing.T) *gated {
	t.Helper()
	g := &gated{rec: &recorder{}, down: true}
	c := fake.NewCluster(fake.Node("n1", nil, 4, 8))
	p, err := policy.Decode([]byte("apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: one\n  plugins:\n    deschedule: {enabled: [D1]}\n"), plugins.NewInTreeArgs())
	if err != nil {
		t.Fatal(err)
	}
	gate := cachegate.NewGate(cachegate.NewTracker(), func(context.Context) error {
		if g.down {
			return errors.New("connection refused")
		}
		return nil
	})
	g.d, err = fwruntime.New(t.Context(), p, fwruntime.Options{Client: c.Client, InformerFactory: c.Factory, AccordInformerFactory: c.CRs,
		Registry: registry(g.rec, nil), Metrics: metrics.New(), CacheGate: gate, OnCachesStale: func(w []string) { g.changes = append(g.changes, w) }})
	if err != nil {
		t.Fatal(err)
	}
	c.Start(t)
	return g
}

// While the CacheGate finds the apiserver unreachable, cycles are skipped (no plugin runs), counted
// and reported once; when it answers again the next cycle runs.
func TestCycleSkippedWhileCachesNotResynced(t *testing.T) {
	g := newGated(t)
	d, rec := g.d, g.rec
	ctx := context.Background()
	d.RunCycle(ctx)
	d.RunCycle(ctx)
	if len(rec.calls) != 0 {
		t.Fatalf("plugins ran on stale caches: %v", rec.calls)
	}
	m := d.Metrics()
	if v, _ := testutil.GetCounterMetricValue(m.CyclesSkipped.WithLabelValues(metrics.SkipCachesNotSynced)); v != 2 {
		t.Errorf("cycles_skipped_total = %v, want 2", v)
	}
	if v, _ := testutil.GetGaugeMetricValue(m.CachesStale); v != 1 {
		t.Errorf("caches_stale = %v, want 1", v)
	}
	if len(g.changes) != 1 || len(g.changes[0]) != 1 {
		t.Fatalf("OnCachesStale calls %v, want one naming the apiserver", g.changes)
	}
	g.down = false
	d.RunCycle(ctx)
	if !slices.Equal(rec.calls, []string{"one/D1/deschedule/1"}) {
		t.Errorf("calls after the caches are fresh: %v", rec.calls)
	}
	if v, _ := testutil.GetGaugeMetricValue(m.CachesStale); v != 0 {
		t.Errorf("caches_stale = %v, want 0", v)
	}
	if len(g.changes) != 2 || g.changes[1] != nil {
		t.Errorf("OnCachesStale calls %v, want a last one with nil", g.changes)
	}
	if v, _ := testutil.GetCounterMetricValue(m.Cycles); v != 1 {
		t.Errorf("cycles_total = %v, want 1", v)
	}
}

// Outside a cycle (event-only mode), CheckCaches reports the caches waited for and a change of state
// (caches_stale, OnCachesStale) without running or counting a cycle.
func TestCheckCachesOutsideCycles(t *testing.T) {
	g := newGated(t)
	d, rec := g.d, g.rec
	ctx := context.Background()
	if w := d.CheckCaches(ctx); len(w) != 1 {
		t.Fatalf("CheckCaches = %v, want the apiserver", w)
	}
	d.CheckCaches(ctx)
	m := d.Metrics()
	if v, _ := testutil.GetGaugeMetricValue(m.CachesStale); v != 1 {
		t.Errorf("caches_stale = %v, want 1", v)
	}
	if v, _ := testutil.GetCounterMetricValue(m.CyclesSkipped.WithLabelValues(metrics.SkipCachesNotSynced)); v != 0 {
		t.Errorf("cycles_skipped_total = %v outside cycles, want 0", v)
	}
	g.down = false
	if w := d.CheckCaches(ctx); w != nil {
		t.Errorf("CheckCaches = %v once the apiserver answers, want none", w)
	}
	if v, _ := testutil.GetGaugeMetricValue(m.CachesStale); v != 0 {
		t.Errorf("caches_stale = %v, want 0", v)
	}
	if len(g.changes) != 2 || len(g.changes[0]) != 1 || g.changes[1] != nil {
		t.Errorf("OnCachesStale calls %v, want one naming the apiserver, then nil", g.changes)
	}
	if len(rec.calls) != 0 {
		t.Errorf("plugins ran: %v", rec.calls)
	}
}
