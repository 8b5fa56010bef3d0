package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/pkg/descheduler/evictions"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/schedulersimulation"
	fwruntime "github.com/accord-sched/accord/pkg/descheduler/framework/runtime"
)

// Verdicts of an explain row.
const (
	ExplainEvict   = "evict"
	ExplainBlocked = "blocked"
)

// ExplainRow is one candidate pod of a dry-run cycle: which profile and plugin nominated it and
// why, whether it would be evicted or what blocked it, and where the scheduler simulation predicts
// its replacement.
type ExplainRow struct {
	Profile   string `json:"profile"`
	Plugin    string `json:"plugin"`
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	Node      string `json:"node"`
	// Reason is the nominating plugin's reason (from its eviction, or for a pod blocked before it,
	// from the plugin's NodeVerdict on the pod's node when it has one).
	Reason  string `json:"reason,omitempty"`
	Verdict string `json:"verdict"`
	// BlockedBy names what blocked the eviction: a preEvictionFilter plugin, "limit" or "evict".
	BlockedBy string `json:"blockedBy,omitempty"`
	// The scheduler simulation's decision, when the profile runs SchedulerSimulation and got to it.
	SimulationReason string `json:"simulationReason,omitempty"`
	SchedulerProfile string `json:"schedulerProfile,omitempty"`
	PredictedNode    string `json:"predictedNode,omitempty"`
	Score            *int64 `json:"score,omitempty"`
	CurrentNodeScore *int64 `json:"currentNodeScore,omitempty"`
	Message          string `json:"message,omitempty"`
}

// Explain runs one descheduling cycle of cfg's policy in dry-run mode (nothing is written to the
// cluster) and returns one row per candidate pod, in the order the plugins considered them.
func Explain(ctx context.Context, cfg Config) ([]ExplainRow, error) {
	cfg.DryRun = true
	cfg.DeschedulingInterval, cfg.EventDriven = 0, false
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type key struct {
		profile string
		uid     types.UID
	}
	var order []key
	rows := map[key]*ExplainRow{}
	pods := map[key]*corev1.Pod{}
	observe := func(r evictions.Record) {
		k := key{r.Profile, r.Pod.UID}
		row := rows[k]
		if row == nil {
			row = &ExplainRow{Profile: r.Profile, Plugin: r.Plugin, Namespace: r.Pod.Namespace, Pod: r.Pod.Name, Node: r.Pod.Spec.NodeName}
			rows[k], pods[k] = row, r.Pod
			order = append(order, k)
		}
		if row.Plugin == "" {
			row.Plugin = r.Plugin
		}
		switch r.Stage {
		case evictions.StagePreEvictionFilter:
			if r.BlockedBy != "" {
				row.Verdict, row.BlockedBy = ExplainBlocked, r.BlockedBy
			} else {
				row.Verdict, row.BlockedBy = ExplainEvict, ""
			}
		case evictions.StageEvict:
			row.Reason = r.Reason
			switch {
			case r.Err == nil || errors.Is(r.Err, framework.ErrDryRun):
				row.Verdict, row.BlockedBy = ExplainEvict, ""
			case framework.IsTotalLimit(r.Err) || framework.IsNodeLimit(r.Err) || framework.IsNamespaceLimit(r.Err):
				row.Verdict, row.BlockedBy, row.Message = ExplainBlocked, "limit", r.Err.Error()
			default:
				row.Verdict, row.BlockedBy, row.Message = ExplainBlocked, "evict", r.Err.Error()
			}
		}
	}
	d, factories, cleanup, err := build(ctx, cfg, observe)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	for _, f := range factories {
		f.Start(ctx.Done())
	}
	defer func() {
		cancel()
		for _, f := range factories {
			f.Shutdown()
		}
	}()
	if err := syncCaches(ctx, d, factories, cfg); err != nil {
		return nil, err
	}
	if err := d.StartMetrics(ctx); err != nil {
		return nil, err
	}
	d.RunCycle(ctx)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}

	var nodes informers.SharedInformerFactory
	for _, f := range factories {
		if sf, ok := f.(informers.SharedInformerFactory); ok {
			nodes = sf
		}
	}
	profiles := map[string]*fwruntime.Profile{}
	for _, p := range d.Profiles() {
		profiles[p.Name] = p
	}
	out := make([]ExplainRow, 0, len(order))
	for _, k := range order {
		row, pod, prof := rows[k], pods[k], profiles[k.profile]
		if prof != nil {
			for _, pl := range prof.Plugins() {
				switch p := pl.(type) {
				case *schedulersimulation.Plugin:
					if dec, ok := p.Decision(pod); ok {
						addDecision(row, dec)
					}
				case framework.NodeVerdicter:
					if row.Reason == "" && pl.Name() == row.Plugin && nodes != nil {
						if node, err := nodes.Core().V1().Nodes().Lister().Get(pod.Spec.NodeName); err == nil {
							if flagged, why := p.NodeVerdict(pod, node); flagged {
								row.Reason = why
							}
						}
					}
				}
			}
		}
		out = append(out, *row)
	}
	return out, nil
}

func addDecision(row *ExplainRow, d schedulersimulation.Decision) {
	row.SimulationReason = d.Reason
	if row.Message == "" {
		row.Message = d.Message
	}
	pred := d.Prediction
	row.SchedulerProfile = pred.Profile
	if pred.Feasible {
		row.PredictedNode = pred.Node
		score := pred.Score
		row.Score = &score
		if pred.CurrentNodeFeasible {
			cur := pred.CurrentNodeScore
			row.CurrentNodeScore = &cur
		}
	}
}

// WriteExplain writes rows as a table (format "" or "table") or as JSON ("json").
func WriteExplain(w io.Writer, rows []ExplainRow, format string) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if rows == nil {
			rows = []ExplainRow{}
		}
		return enc.Encode(rows)
	case "", "table":
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PROFILE\tPLUGIN\tPOD\tNODE\tVERDICT\tBLOCKED-BY\tPREDICTED\tSCORE\tREASON\tDETAIL")
		for _, r := range rows {
			score := "-"
			if r.Score != nil {
				score = fmt.Sprint(*r.Score)
				if r.CurrentNodeScore != nil {
					score += fmt.Sprintf(" (here %d)", *r.CurrentNodeScore)
				}
			}
			blocked := dash(r.BlockedBy)
			if r.SimulationReason != "" && r.BlockedBy == schedulersimulation.Name {
				blocked += "/" + r.SimulationReason
			}
			fmt.Fprintf(tw, "%s\t%s\t%s/%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Profile, dash(r.Plugin), r.Namespace, r.Pod, r.Node,
				r.Verdict, blocked, dash(r.PredictedNode), score, dash(oneLine(r.Reason)), dash(oneLine(r.Message)))
		}
		return tw.Flush()
	}
	return fmt.Errorf("unknown output format %q (want table or json)", format)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// newExplainCommand is `accord-descheduler explain`.
func newExplainCommand(opts ...Option) *cobra.Command {
	var cfg Config
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
			rows, err := Explain(klog.NewContext(ctx, klog.Background()), cfg)
			if err != nil {
				return err
			}
			return WriteExplain(cmd.OutOrStdout(), rows, output)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&cfg.PolicyConfigFile, "policy-config-file", "", "File with the DeschedulerPolicy (descheduler/v1alpha2).")
	fs.StringVar(&cfg.SchedulerConfigFile, "scheduler-config-file", "", "KubeSchedulerConfiguration accord-scheduler runs, for the SchedulerSimulation plugin.")
	fs.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "Kubeconfig file; empty uses the in-cluster configuration.")
	fs.StringVarP(&output, "output", "o", "table", "Output format: table or json.")
	return cmd
}
