package metrics

import (
	"strings"
	"testing"

	"k8s.io/component-base/metrics/testutil"
)

// cycles_skipped_total{reason="caches_not_synced"} is exported at 0 before any skip, so that an alert
// on its increase sees the first one.
func TestCyclesSkippedStartsAtZero(t *testing.T) {
	m := New()
	want := `# HELP accord_descheduler_cycles_skipped_total [ALPHA] Descheduling cycles skipped, by reason (caches_not_synced: a watch broke and the informers have not re-synced).
# TYPE accord_descheduler_cycles_skipped_total counter
accord_descheduler_cycles_skipped_total{reason="caches_not_synced"} 0
`
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "accord_descheduler_cycles_skipped_total"); err != nil {
		t.Error(err)
	}
}
