package app

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/component-base/featuregate"
	"k8s.io/component-base/version"
)

// EvictionsInBackground is upstream's alpha gate for KubeVirt-style evictions in background: an
// eviction of a pod annotated descheduler.alpha.kubernetes.io/request-evict-only that the API answers
// 429 "Eviction triggered evacuation" is tracked as in progress (with the pod's
// descheduler.alpha.kubernetes.io/eviction-in-progress annotation), counted against the caps and its
// workload budget and never requested again until the pod is gone (pkg/descheduler/evictions).
const EvictionsInBackground featuregate.Feature = "EvictionsInBackground"

// deschedulerFeatureGates are upstream kubernetes-sigs/descheduler's gates (v0.36), with its
// defaults; --feature-gates also takes component-base's logging gates.
func deschedulerFeatureGates() map[featuregate.Feature]featuregate.FeatureSpec {
	return map[featuregate.Feature]featuregate.FeatureSpec{
		EvictionsInBackground: {Default: false, PreRelease: featuregate.Alpha},
	}
}

// newVersionCommand is upstream's `version` subcommand: it prints component-base's version (the
// Makefile stamps it with -ldflags).
func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of accord-descheduler",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return printVersion(cmd.OutOrStdout())
		},
	}
}

func printVersion(w io.Writer) error {
	v := version.Get()
	_, err := fmt.Fprintf(w, "accord-descheduler version %s (gitCommit %s, gitTreeState %s, buildDate %s, %s, %s, %s)\n",
		v.GitVersion, v.GitCommit, v.GitTreeState, v.BuildDate, v.GoVersion, v.Compiler, v.Platform)
	return err
}
