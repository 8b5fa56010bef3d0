package kubectlaccord

import (
	"fmt"

	"github.com/accord-sched/accord/pkg/console"
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
	th, err := console.LoadSchedulerThresholds(schedulerFile)
	if err != nil {
		return th, fmt.Errorf("--scheduler-config: %w", err)
	}
	return th, nil
}
