package podmigration

import (
	"context"
	"testing"

	compmetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	deschedmetrics "github.com/accord-sched/accord/pkg/descheduler/metrics"
	accordfake "github.com/accord-sched/accord/pkg/generated/clientset/versioned/fake"
)

// A status write counts the phase the migration enters, once: writing the same phase again (a
// Running migration's progress) is not a transition. Two instances on one registry share the set.
func TestPhaseTransitionsCounted(t *testing.T) {
	pm := migration("dst")
	fh, err := fake.NewHandle(fake.NewCluster())
	if err != nil {
		t.Fatal(err)
	}
	reg := deschedmetrics.NewSharedRegistry(compmetrics.NewKubeRegistry()) // as the descheduler's: profiles share collectors on it
	p := &Plugin{handle: fh, accord: accordfake.NewSimpleClientset(pm), metrics: newMetrics()}
	if err := p.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	other := &Plugin{metrics: newMetrics()}
	if err := other.RegisterMetrics(reg); err != nil || other.metrics != p.metrics {
		t.Fatalf("second instance on the registry: %v, shares the set: %v", err, other.metrics == p.metrics)
	}
	count := func(phase schedv1alpha1.PodMigrationPhase) float64 {
		t.Helper()
		v, err := testutil.GetCounterMetricValue(p.metrics.transitions.WithLabelValues(string(phase)))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	ctx := context.Background()
	running := &schedv1alpha1.PodMigrationStatus{Phase: schedv1alpha1.PodMigrationRunning}
	if _, err := p.writeStatus(ctx, pm, result{status: running}); err != nil {
		t.Fatal(err)
	}
	pm.Status.Phase = schedv1alpha1.PodMigrationRunning
	if _, err := p.writeStatus(ctx, pm, result{status: running}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.writeStatus(ctx, pm, result{status: &schedv1alpha1.PodMigrationStatus{Phase: schedv1alpha1.PodMigrationFailed}}); err != nil {
		t.Fatal(err)
	}
	if got := count(schedv1alpha1.PodMigrationRunning); got != 1 {
		t.Errorf("Running counted %v times, want 1", got)
	}
	if got := count(schedv1alpha1.PodMigrationFailed); got != 1 {
		t.Errorf("Failed counted %v times, want 1", got)
	}
	if got := count(schedv1alpha1.PodMigrationSucceeded); got != 0 {
		t.Errorf("Succeeded counted %v times, want 0", got)
	}
}
