package podmigration

import (
	compmetrics "k8s.io/component-base/metrics"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	deschedmetrics "github.com/accord-sched/accord/pkg/descheduler/metrics"
)

// metrics are the controller's metrics; the runtime registers them with the descheduler's registry
// (RegisterMetrics), one set per registry whatever the number of profiles running the controller.
type metrics struct {
	// transitions counts the phases the controller writes (Pending, Running, Succeeded, Failed,
	// Aborted), each time a migration enters one.
	transitions *compmetrics.CounterVec
}

func newMetrics() *metrics {
	return &metrics{transitions: compmetrics.NewCounterVec(&compmetrics.CounterOpts{
		Namespace: "accord", Subsystem: "descheduler", Name: "pod_migration_transitions_total",
		Help:           "PodMigrations that entered a phase (Pending, Running, Succeeded, Failed, Aborted), as written by the PodMigration controller.",
		StabilityLevel: compmetrics.ALPHA,
	}, []string{"phase"})}
}

// RegisterMetrics registers the controller's metrics with reg (once per registry: the profiles'
// instances share them), each phase starting at 0 so that a rate sees the first migration.
func (p *Plugin) RegisterMetrics(reg compmetrics.KubeRegistry) error {
	m, err := deschedmetrics.RegisterShared(reg, Name, func(reg compmetrics.KubeRegistry) (*metrics, error) {
		if err := reg.Register(p.metrics.transitions); err != nil {
			return nil, err
		}
		for _, phase := range []schedv1alpha1.PodMigrationPhase{schedv1alpha1.PodMigrationPending, schedv1alpha1.PodMigrationRunning,
			schedv1alpha1.PodMigrationSucceeded, schedv1alpha1.PodMigrationFailed, schedv1alpha1.PodMigrationAborted} {
			p.metrics.transitions.WithLabelValues(string(phase))
		}
		return p.metrics, nil
	})
	if err != nil {
		return err
	}
	p.metrics = m
	return nil
}
