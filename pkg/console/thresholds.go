package console

import (
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/accord-sched/accord/apis/config"
	"github.com/accord-sched/accord/pkg/constraints"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/lownodeload"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
	"github.com/accord-sched/accord/pkg/descheduler/simulator"
	"github.com/accord-sched/accord/pkg/scheduler/plugins/loadaware"
)

// LoadThresholds returns the thresholds the node grid compares NodeMetrics with: the highThresholds
// and nodeMetricExpirationSeconds of the policy's first LowNodeLoad (the descheduler checks them
// against accord-scheduler's LoadAware when given its configuration), or else LoadAware's defaults.
func LoadThresholds(policyFile, schedulerConfigFile string) (Thresholds, error) {
	after := config.DefaultEstimatedSecondsAfterPodScheduled
	th := Thresholds{Percent: config.DefaultUsageThresholds(), MaxAge: time.Duration(config.DefaultNodeMetricExpirationSeconds) * time.Second,
		Estimator: estimator(config.DefaultEstimatedScalingFactors(), &after)}
	if policyFile == "" {
		return th, nil
	}
	p, _, err := runner.LoadPolicy(policyFile, schedulerConfigFile)
	if err != nil {
		return th, err
	}
	for _, prof := range p.Profiles {
		for _, pc := range prof.PluginConfigs {
			a, ok := pc.Args.(*lownodeload.LowNodeLoadArgs)
			if !ok || a.UseDeviationThresholds {
				continue
			}
			if a.HighThresholds != nil {
				th.Percent = map[corev1.ResourceName]int64{}
				for k, v := range a.HighThresholds {
					th.Percent[k] = v
				}
			}
			if a.NodeMetricExpirationSeconds != nil {
				th.MaxAge = time.Duration(*a.NodeMetricExpirationSeconds) * time.Second
			}
			th.Estimator = estimator(a.EstimatedScalingFactors, a.EstimatedSecondsAfterPodScheduled)
			return th, nil
		}
	}
	return th, nil
}

// estimator is the usage estimate for LowNodeLoad's (or LoadAware's) estimate args.
func estimator(factors map[corev1.ResourceName]int64, after *int64) *constraints.UsageEstimator {
	var fs []constraints.ResourceFactor
	for _, name := range slices.Sorted(maps.Keys(factors)) {
		fs = append(fs, constraints.ResourceFactor{Name: name, Percent: factors[name]})
	}
	var d time.Duration
	if after != nil {
		d = time.Duration(*after) * time.Second
	}
	return constraints.NewUsageEstimator(fs, d)
}

// LoadSchedulerThresholds returns the thresholds accord-scheduler's LoadAware judges with under the
// scheduler configuration in schedulerFile: the args of its first profile that configures LoadAware
// (decoded and defaulted as accord-scheduler does, simulator.LoadConfig), or else LoadAware's
// defaults.
func LoadSchedulerThresholds(schedulerFile string) (Thresholds, error) {
	cfg, err := simulator.LoadConfig(schedulerFile)
	if err != nil {
		return Thresholds{}, err
	}
	for _, prof := range cfg.Profiles {
		for _, pc := range prof.PluginConfig {
			if a, ok := pc.Args.(*config.LoadAwareArgs); ok && pc.Name == loadaware.Name {
				var fs []constraints.ResourceFactor
				for _, name := range slices.Sorted(maps.Keys(a.EstimatedScalingFactors)) {
					fs = append(fs, constraints.ResourceFactor{Name: name, Percent: a.EstimatedScalingFactors[name]})
				}
				return Thresholds{Percent: a.UsageThresholds, MaxAge: time.Duration(a.Expiration()) * time.Second,
					Estimator: constraints.NewUsageEstimator(fs, time.Duration(a.SecondsAfterScheduled())*time.Second)}, nil
			}
		}
	}
	return LoadThresholds("", "")
}
