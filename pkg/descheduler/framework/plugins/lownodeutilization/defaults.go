package lownodeutilization

import (
	"github.com/accord-sched/accord/apis/descheduler"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// SetDefaults_LowNodeUtilizationArgs gives cpu, memory and pods that neither map lists 100 percent,
// as upstream does, so they never decide. With deviation thresholds only the listed resources count.
func SetDefaults_LowNodeUtilizationArgs(a *LowNodeUtilizationArgs) {
	if a.Thresholds == nil || a.TargetThresholds == nil || a.UseDeviationThresholds {
		return // missing maps are reported by validation
	}
	if a.MetricsUtilization.source() == descheduler.PrometheusMetrics {
		return // the query's MetricResource is the only resource
	}
	pluginutil.DefaultThresholdResources(100, a.Thresholds, a.TargetThresholds)
}

// SetDefaults implements framework.ArgsDefaulter.
func (a *LowNodeUtilizationArgs) SetDefaults() { SetDefaults_LowNodeUtilizationArgs(a) }
