// Package explain runs one dry-run descheduling cycle and tells, for every candidate pod, which
// profile and plugin nominated it and why, whether it would be evicted or what blocked it, and where
// the scheduler simulation predicts its replacement. accord-descheduler's explain subcommand and the
// console call it.
package explain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/accord-sched/accord/pkg/descheduler/evictions"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/schedulersimulation"
	fwruntime "github.com/accord-sched/accord/pkg/descheduler/framework/runtime"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
)

// BlockedByWorkloadBudget is the BlockedBy of a pod its workload's disruption budget holds, in the
// words of its EvictionHeld Event.
const BlockedByWorkloadBudget = evictions.HeldWorkloadBudget

// BlockedByWindow is the BlockedBy of a pod a closed eviction window holds, in the words of its
// EvictionHeld Event.
const BlockedByWindow = evictions.HeldWindow

// BlockedByInProgress is the BlockedBy of a pod whose eviction is already in progress (soft-evicted,
// or evicted in background).
const BlockedByInProgress = "eviction in progress"

// Verdicts of an explain row.
const (
	VerdictEvict   = "evict"
	VerdictBlocked = "blocked"
)

// Row is one candidate pod of a dry-run cycle: which profile and plugin nominated it and
// why, whether it would be evicted or what blocked it, and where the scheduler simulation predicts
// its replacement.
type Row struct {
	Profile   string `json:"profile"`
	Plugin    string `json:"plugin"`
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	Node      string `json:"node"`
	// Reason is the nominating plugin's reason (from its eviction, or for a pod blocked before it,
	// from the plugin's NodeVerdict on the pod's node when it has one).
	Reason  string `json:"reason,omitempty"`
	Verdict string `json:"verdict"`
	// BlockedBy names what blocked the eviction: a preEvictionFilter plugin, "limit",
	// "workload budget" or "evict".
	BlockedBy string `json:"blockedBy,omitempty"`
	// The scheduler simulation's decision, when the profile runs SchedulerSimulation and got to it.
	SimulationReason string `json:"simulationReason,omitempty"`
	SchedulerProfile string `json:"schedulerProfile,omitempty"`
	PredictedNode    string `json:"predictedNode,omitempty"`
	Score            *int64 `json:"score,omitempty"`
	CurrentNodeScore *int64 `json:"currentNodeScore,omitempty"`
	Message          string `json:"message,omitempty"`
}

// Run runs one descheduling cycle of cfg's policy in dry-run mode (nothing is written to the
// cluster) and returns one row per candidate pod, in the order the plugins considered them.
func Run(ctx context.Context, cfg runner.Config) ([]Row, error) {
	cfg.DryRun = true
	cfg.DeschedulingInterval, cfg.EventDriven = 0, false
	// Every plugin runs, even past the total cap, so every candidate gets a row.
	cfg.RunPastTotalCap = true
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type key struct {
		profile string
		uid     types.UID
	}
	var order []key
	rows := map[key]*Row{}
	pods := map[key]*corev1.Pod{}
	observe := func(r evictions.Record) {
		k := key{r.Profile, r.Pod.UID}
		row := rows[k]
		if row == nil {
			row = &Row{Profile: r.Profile, Plugin: r.Plugin, Namespace: r.Pod.Namespace, Pod: r.Pod.Name, Node: r.Pod.Spec.NodeName}
			rows[k], pods[k] = row, r.Pod
			order = append(order, k)
		}
		if row.Plugin == "" {
			row.Plugin = r.Plugin
		}
		switch r.Stage {
		case evictions.StagePreEvictionFilter:
			if r.BlockedBy != "" {
				row.Verdict, row.BlockedBy = VerdictBlocked, r.BlockedBy
			} else {
				row.Verdict, row.BlockedBy = VerdictEvict, ""
			}
		case evictions.StageEvict:
			row.Reason = r.Reason
			switch {
			case framework.IsWindowClosed(r.Err) && errors.Is(r.Err, framework.ErrDryRun):
				// Outside the profile's eviction windows: what it would do, and when.
				row.Verdict, row.BlockedBy, row.Message = VerdictEvict, "", r.Err.Error()
			case r.Err == nil || errors.Is(r.Err, framework.ErrDryRun):
				row.Verdict, row.BlockedBy = VerdictEvict, ""
			case framework.IsWindowClosed(r.Err):
				row.Verdict, row.BlockedBy, row.Message = VerdictBlocked, BlockedByWindow, r.Err.Error()
			case framework.IsTotalLimit(r.Err) || framework.IsNodeLimit(r.Err) || framework.IsNamespaceLimit(r.Err):
				row.Verdict, row.BlockedBy, row.Message = VerdictBlocked, "limit", r.Err.Error()
			case framework.IsEvictionInProgress(r.Err):
				row.Verdict, row.BlockedBy, row.Message = VerdictBlocked, BlockedByInProgress, r.Err.Error()
			case framework.IsWorkloadBudget(r.Err):
				row.Verdict, row.BlockedBy, row.Message = VerdictBlocked, BlockedByWorkloadBudget, r.Err.Error()
			default:
				row.Verdict, row.BlockedBy, row.Message = VerdictBlocked, "evict", r.Err.Error()
			}
		}
	}
	cfg.Observer = observe
	d, err := runner.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer d.Stop()
	d.RunCycle(ctx)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}

	profiles := map[string]*fwruntime.Profile{}
	for _, p := range d.Profiles() {
		profiles[p.Name] = p
	}
	out := make([]Row, 0, len(order))
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
					if row.Reason == "" && pl.Name() == row.Plugin {
						if node, err := d.Nodes().Get(pod.Spec.NodeName); err == nil {
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

func addDecision(row *Row, d schedulersimulation.Decision) {
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

// Write writes rows as a table (format "" or "table") or as JSON ("json").
func Write(w io.Writer, rows []Row, format string) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if rows == nil {
			rows = []Row{}
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
