package rejections

import (
	"strings"
	"testing"

	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
)

// A series starts at 0 when a plugin takes it, and counts its increments without allocating.
func TestCounter(t *testing.T) {
	c := Counter("NodeCRDResourceFit", ResourceNotEnabled)
	Counter("LoadAware", OverThreshold)
	want := `
# HELP accord_scheduler_filter_rejections_total ` + rejections.Help + `
# TYPE accord_scheduler_filter_rejections_total counter
accord_scheduler_filter_rejections_total{plugin="LoadAware",reason="over_threshold"} 0
accord_scheduler_filter_rejections_total{plugin="NodeCRDResourceFit",reason="resource_not_enabled"} 2
`
	c.Inc()
	if allocs := testing.AllocsPerRun(100, c.Inc); allocs != 0 {
		t.Errorf("Inc allocates %v times", allocs)
	}
	rejections.Reset()
	Counter("LoadAware", OverThreshold)
	c = Counter("NodeCRDResourceFit", ResourceNotEnabled)
	c.Inc()
	c.Inc()
	if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(want), "accord_scheduler_filter_rejections_total"); err != nil {
		t.Error(err)
	}
}
