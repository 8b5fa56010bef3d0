// Command monitoring writes manifests/monitoring/accord-dashboard.json from the panels of package
// monitoring and copies the rules file and the dashboard into the Helm chart's files/ (`make
// monitoring`); manifests/monitoring's tests fail when any of them is stale.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/accord-sched/accord/manifests/monitoring"
)

func main() {
	if err := run("manifests/monitoring", "manifests/charts/accord/files"); err != nil {
		fmt.Fprintln(os.Stderr, "monitoring:", err)
		os.Exit(1)
	}
}

func run(dir, chartFiles string) error {
	dashboard, err := monitoring.Dashboard()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, monitoring.DashboardFile), dashboard, 0o644); err != nil {
		return err
	}
	rules, err := os.ReadFile(filepath.Join(dir, monitoring.RulesFile))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(chartFiles, 0o755); err != nil {
		return err
	}
	for name, data := range map[string][]byte{monitoring.DashboardFile: dashboard, monitoring.RulesFile: rules} {
		if err := os.WriteFile(filepath.Join(chartFiles, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
