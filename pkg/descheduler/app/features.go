package app

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/component-base/featuregate"
	"k8s.io/component-base/version"
)

// EvictionsInBackground is upstream's alpha gate for KubeVirt-style evictions in background.
const EvictionsInBackground featuregate.Feature = "EvictionsInBackground"

// deschedulerFeatureGates are upstream kubernetes-sigs/descheduler's gates (v0.36), with its
// defaults; --feature-gates also takes component-base's logging gates.
func deschedulerFeatureGates() map[featuregate.Feature]featuregate.FeatureSpec {
	return map[featuregate.Feature]featuregate.FeatureSpec{
		EvictionsInBackground: {Default: false, PreRelease: featuregate.Alpha},
	}
}

var errEvictionsInBackground = errors.New("--feature-gates: EvictionsInBackground=true is not supported by accord-descheduler: " +
	"it does not track evictions that a validating webhook answers with 429 \"Eviction triggered evacuation\" " +
	"(KubeVirt live migration of pods annotated descheduler.alpha.kubernetes.io/request-evict-only); " +
	"such an answer is counted as a refused eviction and the pod is tried again next cycle. Leave the gate off")

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
