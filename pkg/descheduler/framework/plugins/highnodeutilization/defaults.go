package highnodeutilization

import "github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"

// SetDefaults_HighNodeUtilizationArgs gives cpu, memory and pods that thresholds does not list 100
// percent, as upstream does, so they never decide.
func SetDefaults_HighNodeUtilizationArgs(a *HighNodeUtilizationArgs) {
	if a.Thresholds != nil {
		pluginutil.DefaultThresholdResources(100, a.Thresholds)
	}
}

// SetDefaults implements framework.ArgsDefaulter.
func (a *HighNodeUtilizationArgs) SetDefaults() { SetDefaults_HighNodeUtilizationArgs(a) }
