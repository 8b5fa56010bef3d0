package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/pkg/descheduler/explain"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
)

// newExplainCommand is `accord-descheduler explain`.
func newExplainCommand(opts ...Option) *cobra.Command {
	var cfg runner.Config
	var output string
	cmd := &cobra.Command{
		Use:   "explain",
		Short: "Run one dry-run cycle and explain every candidate pod",
		Long: `explain runs one descheduling cycle of the policy in dry-run mode (nothing is written to the cluster)
and prints one row per candidate pod: the profile and plugin that nominated it and why, the verdict
(evict, or blocked and by what: a preEvictionFilter plugin such as SchedulerSimulation or
DefaultEvictor, an eviction limit), and where the scheduler simulation predicts its replacement,
with the score (and the current node's).`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.PolicyConfigFile == "" {
				return errors.New("--policy-config-file is required")
			}
			if output != "" && output != "table" && output != "json" {
				return fmt.Errorf("-o %s: want table or json", output)
			}
			cfg.Plugins = opts
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			// explain builds the descheduler's informers (the cluster's pods): the same memory settings.
			tuneMemory(klog.Background())
			rows, err := explain.Run(klog.NewContext(ctx, klog.Background()), cfg)
			if err != nil {
				return err
			}
			return explain.Write(cmd.OutOrStdout(), rows, output)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&cfg.PolicyConfigFile, "policy-config-file", "", "File with the DeschedulerPolicy (descheduler/v1alpha2).")
	fs.StringVar(&cfg.SchedulerConfigFile, "scheduler-config-file", "", "KubeSchedulerConfiguration accord-scheduler runs, for the SchedulerSimulation plugin.")
	fs.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "Kubeconfig file; empty uses the in-cluster configuration.")
	fs.StringVarP(&output, "output", "o", "table", "Output format: table or json.")
	return cmd
}
