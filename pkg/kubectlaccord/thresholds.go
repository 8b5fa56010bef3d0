package kubectlaccord

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/accord-sched/accord/apis/config"
	"github.com/accord-sched/accord/pkg/console"
	"github.com/accord-sched/accord/pkg/constraints"
	"github.com/accord-sched/accord/pkg/descheduler/simulator"
	"github.com/accord-sched/accord/pkg/scheduler/plugins/loadaware"
)

// loadThresholds are the thresholds `nodes` judges with: with --policy, its first LowNodeLoad's
// (console.LoadThresholds, as the console's node grid); else with --scheduler-config, the LoadAware
// args of its first profile that configures LoadAware (decoded and defaulted as accord-scheduler
// does, simulator.LoadConfig); else LoadAware's defaults.
func loadThresholds(policyFile, schedulerFile string) (console.Thresholds, error) {
	if policyFile != "" || schedulerFile == "" {
		th, err := console.LoadThresholds(policyFile, schedulerFile)
		if err != nil {
			return th, fmt.Errorf("--policy %s: %w", policyFile, err)
		}
		return th, nil
	}
	cfg, err := simulator.LoadConfig(schedulerFile)
	if err != nil {
		return console.Thresholds{}, fmt.Errorf("--scheduler-config: %w", err)
	}
	for _, prof := range cfg.Profiles {
		for _, pc := range prof.PluginConfig {
			if a, ok := pc.Args.(*config.LoadAwareArgs); ok && pc.Name == loadaware.Name {
				var fs []constraints.ResourceFactor
				for _, name := range slices.Sorted(maps.Keys(a.EstimatedScalingFactors)) {
					fs = append(fs, constraints.ResourceFactor{Name: name, Percent: a.EstimatedScalingFactors[name]})
				}
				return console.Thresholds{Percent: a.UsageThresholds, MaxAge: time.Duration(a.NodeMetricExpirationSeconds) * time.Second,
					Estimator: constraints.NewUsageEstimator(fs, time.Duration(a.EstimatedSecondsAfterPodScheduled)*time.Second)}, nil
			}
		}
	}
	return console.LoadThresholds("", "")
}
