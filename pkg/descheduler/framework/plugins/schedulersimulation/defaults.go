package schedulersimulation

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Defaults.
const (
	DefaultFlapWindow  = time.Hour
	DefaultBackoffBase = 5 * time.Minute
	DefaultBackoffMax  = 6 * time.Hour
)

// SetDefaults_SchedulerSimulationArgs fills in the window and the backoff bounds.
func SetDefaults_SchedulerSimulationArgs(a *SchedulerSimulationArgs) {
	if a.FlapWindow == nil {
		a.FlapWindow = &metav1.Duration{Duration: DefaultFlapWindow}
	}
	if a.BackoffBase == nil {
		a.BackoffBase = &metav1.Duration{Duration: DefaultBackoffBase}
	}
	if a.BackoffMax == nil {
		a.BackoffMax = &metav1.Duration{Duration: DefaultBackoffMax}
	}
}

// SetDefaults implements framework.ArgsDefaulter.
func (a *SchedulerSimulationArgs) SetDefaults() { SetDefaults_SchedulerSimulationArgs(a) }
