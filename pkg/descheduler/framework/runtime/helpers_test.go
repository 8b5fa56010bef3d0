package runtime_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	fwruntime "github.com/accord-sched/accord/pkg/descheduler/framework/runtime"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
)

// histogramCount sums the sample counts of a histogram's series whose labels include want.
func histogramCount(t *testing.T, m *metrics.Metrics, name string, want map[string]string) uint64 {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, s := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range s.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if have[k] != v {
					continue series
				}
			}
			n += s.GetHistogram().GetSampleCount()
		}
	}
	return n
}

func everything() labels.Selector { return labels.Everything() }

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startSynced starts the fake cluster's informers and waits for d's caches (the informers and its
// PlacementJudges).
func startSynced(t *testing.T, c *fake.Cluster, d *fwruntime.Descheduler) {
	t.Helper()
	c.Start(t)
	if !d.WaitForCacheSync(context.Background()) {
		t.Fatal("caches not synced")
	}
}
