package removepodsviolatingtopologyspreadconstraint

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// SetDefaults_RemovePodsViolatingTopologySpreadConstraintArgs defaults constraints to
// [DoNotSchedule] (adding ScheduleAnyway for the deprecated includeSoftConstraints) and
// topologyBalanceNodeFit to true.
func SetDefaults_RemovePodsViolatingTopologySpreadConstraintArgs(a *RemovePodsViolatingTopologySpreadConstraintArgs) {
	if len(a.Constraints) == 0 {
		a.Constraints = []corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule}
	}
	if a.IncludeSoftConstraints && !slices.Contains(a.Constraints, corev1.ScheduleAnyway) {
		a.Constraints = append(a.Constraints, corev1.ScheduleAnyway)
	}
	if a.TopologyBalanceNodeFit == nil {
		v := true
		a.TopologyBalanceNodeFit = &v
	}
}

// SetDefaults implements framework.ArgsDefaulter.
func (a *RemovePodsViolatingTopologySpreadConstraintArgs) SetDefaults() {
	SetDefaults_RemovePodsViolatingTopologySpreadConstraintArgs(a)
}
