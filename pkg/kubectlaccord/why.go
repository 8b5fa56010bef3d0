package kubectlaccord

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/console"
	"github.com/accord-sched/accord/pkg/descheduler/explain"
	"github.com/accord-sched/accord/pkg/descheduler/framework/decision"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
	"github.com/accord-sched/accord/pkg/scheduler/plugins"
)

// WhyReport is what `kubectl accord why POD` reports.
type WhyReport struct {
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	Node      string `json:"node,omitempty"`
	// Phase is the pod's phase; "" when the pod is gone (Gone), and only its recorded decisions
	// tell its story.
	Phase string `json:"phase,omitempty"`
	Gone  bool   `json:"gone,omitempty"`
	// SchedulingFailure is the scheduler's last word on a pod it could not place: the message of
	// the latest FailedScheduling Event, or else of the PodScheduled=False condition.
	SchedulingFailure string `json:"schedulingFailure,omitempty"`
	// Refusals are the Accord scheduler plugins whose Filter reasons that message carries.
	Refusals []Refusal `json:"refusals,omitempty"`
	// Descheduler is the verdict of one dry-run descheduling cycle of --policy (explain's rows for
	// this pod, one per profile that nominated it); nil without --policy.
	Descheduler *DeschedulerVerdict `json:"descheduler,omitempty"`
	// Migrations and Reservations are the PodMigrations for this pod and the Reservations it (or
	// its controller's replacements) may consume.
	Migrations   []MigrationSummary   `json:"migrations,omitempty"`
	Reservations []ReservationSummary `json:"reservations,omitempty"`
	// Decisions are the descheduler's recorded decisions about a pod of this name (its Events'
	// decisions, trusted as the console trusts them), oldest first, each with where the evicted
	// pod's replacement landed.
	Decisions []RecordedDecision `json:"decisions,omitempty"`
}

// RecordedDecision is one eviction decision the descheduler recorded on an Event about the pod.
type RecordedDecision struct {
	Time time.Time `json:"time"`
	// UID and Node are the pod's (a StatefulSet's replacement has the same name, another UID).
	UID     string `json:"uid"`
	Node    string `json:"node,omitempty"`
	Plugin  string `json:"plugin"`
	Profile string `json:"profile"`
	Reason  string `json:"reason,omitempty"`
	Verdict string `json:"verdict"`
	// HeldBy and HeldMessage are what held the pod (verdict Held).
	HeldBy      string `json:"heldBy,omitempty"`
	HeldMessage string `json:"heldMessage,omitempty"`
	// PredictedNode and Score are the placement judge's prediction for the replacement.
	PredictedNode string `json:"predictedNode,omitempty"`
	Score         *int64 `json:"score,omitempty"`
	Reservation   string `json:"reservation,omitempty"`
	// ReplacementPod and ReplacementNode are the pod that replaced it (the pod its PodMigration
	// names, else the pod that consumed its Reservation, else the oldest pod of its controller
	// created after the eviction was requested, as the console matches them) and where it landed
	// ("" while pending).
	ReplacementPod  string `json:"replacementPod,omitempty"`
	ReplacementNode string `json:"replacementNode,omitempty"`
}

// Refusal is an Accord plugin's Filter reason found in the scheduler's message.
type Refusal = plugins.Refusal

// DeschedulerVerdict is explain's view of the pod now.
type DeschedulerVerdict struct {
	Policy string `json:"policy"`
	// Candidate is false when no profile nominated the pod in the cycle.
	Candidate bool          `json:"candidate"`
	Rows      []explain.Row `json:"rows,omitempty"`
}

// MigrationSummary is one PodMigration of the pod.
type MigrationSummary struct {
	Name    string `json:"name"`
	Phase   string `json:"phase"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	Target  string `json:"targetNode,omitempty"`
	// ReplacementPod and ReplacementNode are where the replacement landed.
	ReplacementPod  string `json:"replacementPod,omitempty"`
	ReplacementNode string `json:"replacementNode,omitempty"`
	Reservation     string `json:"reservation,omitempty"`
}

// ReservationSummary is one Reservation the pod or its replacement may consume.
type ReservationSummary struct {
	Name    string `json:"name"`
	Phase   string `json:"phase"`
	Node    string `json:"node,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

type whyOptions struct {
	*Options
	output                    string
	policyFile, schedulerFile string
}

func newWhyCommand(o *Options) *cobra.Command {
	wo := &whyOptions{Options: o}
	cmd := &cobra.Command{
		Use:   "why POD",
		Short: "Why a pod is Pending, or what the descheduler would do with it",
		Long: `why tells a pod's story: the scheduler's last FailedScheduling message and the Accord plugins
whose Filter refused it; with --policy, the descheduler's verdict for it now (one dry-run cycle of
the policy, the code accord-descheduler explain runs: nothing is written), with what blocks it and
the node the scheduler simulation predicts for its replacement; and its PodMigrations and
Reservations.`,
		Example: `  kubectl accord why web-0 -n shop
  kubectl accord why web-0 -n shop --policy policy.yaml --scheduler-config scheduler-config.yaml -o yaml`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if wo.output != "" && wo.output != "json" && wo.output != "yaml" {
				return usageError{fmt.Errorf("-o %q: the output is json or yaml (or the default text)", wo.output)}
			}
			ns, _, err := wo.Flags.ToRawKubeConfigLoader().Namespace()
			if err != nil {
				return err
			}
			c, err := wo.clients()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			rep, err := why(ctx, c, ns, args[0])
			if err != nil {
				return err
			}
			if wo.policyFile != "" {
				v, err := wo.deschedulerVerdict(ctx, ns, args[0])
				if err != nil {
					return err
				}
				rep.Descheduler = v
			}
			if wo.output != "" {
				return printObject(wo.Streams.Out, wo.output, rep)
			}
			return printWhy(wo.Streams.Out, rep)
		},
	}
	cmd.Flags().StringVarP(&wo.output, "output", "o", "", "Output format: json or yaml (default: text)")
	cmd.Flags().StringVar(&wo.policyFile, "policy", "", "accord-descheduler's policy file: run one dry-run cycle of it for the descheduler's verdict")
	cmd.Flags().StringVar(&wo.schedulerFile, "scheduler-config", "", "accord-scheduler's configuration, for the policy's SchedulerSimulation")
	return cmd
}

// deschedulerVerdict runs explain (the code of `accord-descheduler explain`) over the cluster and
// keeps the pod's rows.
func (wo *whyOptions) deschedulerVerdict(ctx context.Context, ns, pod string) (*DeschedulerVerdict, error) {
	cfg, err := wo.Flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	// The descheduler's runtime logs through klog; a kubectl plugin prints only its answer.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	rows, err := explain.Run(ctx, runner.Config{RestConfig: cfg, PolicyConfigFile: wo.policyFile, SchedulerConfigFile: wo.schedulerFile})
	if err != nil {
		return nil, fmt.Errorf("the descheduler's dry-run cycle of %s: %w", wo.policyFile, err)
	}
	v := &DeschedulerVerdict{Policy: wo.policyFile}
	for _, r := range rows {
		if r.Namespace == ns && r.Pod == pod {
			v.Rows = append(v.Rows, r)
		}
	}
	v.Candidate = len(v.Rows) > 0
	return v, nil
}

// why reads the pod, its FailedScheduling Events, the descheduler's decisions about it, its
// PodMigrations and Reservations. A pod that is gone is reported from its decisions; without any,
// it is not found.
func why(ctx context.Context, c *Clients, ns, name string) (*WhyReport, error) {
	pod, getErr := c.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if getErr != nil && !apierrors.IsNotFound(getErr) {
		return nil, request(getErr, "get", "", "pods", ns)
	}
	if getErr != nil {
		pod = nil
	}
	rep := &WhyReport{Namespace: ns, Pod: name, Gone: pod == nil}
	if pod != nil {
		rep.Node, rep.Phase = pod.Spec.NodeName, string(pod.Status.Phase)
	}
	if pod != nil && pod.Spec.NodeName == "" {
		evs, err := c.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
			"involvedObject.name": name, "involvedObject.uid": string(pod.UID)}.AsSelector().String()})
		if err != nil {
			return nil, request(err, "list", "", "events", ns)
		}
		rep.SchedulingFailure = schedulingFailure(pod, evs.Items)
		rep.Refusals = plugins.Refusals(pod, rep.SchedulingFailure)
	}
	migs, err := c.Accord.SchedulingV1alpha1().PodMigrations(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, request(err, "list", schedv1alpha1.SchemeGroupVersion.Group, "podmigrations", ns)
	}
	ress, err := c.Accord.SchedulingV1alpha1().Reservations(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, request(err, "list", schedv1alpha1.SchemeGroupVersion.Group, "reservations", ns)
	}
	decisions, ctrl, err := recordedDecisions(ctx, c, ns, name, pod, migs.Items, ress.Items)
	if err != nil {
		return nil, err
	}
	if pod == nil && len(decisions) == 0 {
		return nil, request(getErr, "get", "", "pods", ns)
	}
	rep.Decisions = decisions
	for _, m := range migs.Items {
		if m.Spec.PodName != name {
			continue
		}
		rep.Migrations = append(rep.Migrations, migrationSummary(&m))
	}
	for _, r := range ress.Items {
		if !ownsReservation(&r, name, ctrl) {
			continue
		}
		rep.Reservations = append(rep.Reservations, ReservationSummary{Name: r.Name, Phase: string(r.Status.Phase), Node: r.Status.NodeName,
			Reason: r.Status.Reason, Message: r.Status.Message})
	}
	return rep, nil
}

// recordedDecisions reads the descheduler's decisions in namespace ns (console.DecisionOf: only
// from its Events, in their pod's namespace, about that pod) and matches each eviction with its
// replacement as the console does: oldest first, the replacement a PodMigration names, else
// console.Replacement among the namespace's pods, each replacement taken once. One step goes
// further than the console: an eviction that placed a reservation (ReservationFirst) is matched
// with the pod that consumed it (the reservation's boundPod), since a reservation is consumed by
// the replacement of the pod it was made for first. It returns the
// decisions about pods named name, and the UID of the pod's controller (the live pod's, else the
// latest decision's), "" when unknown.
func recordedDecisions(ctx context.Context, c *Clients, ns, name string, pod *corev1.Pod, migs []schedv1alpha1.PodMigration,
	ress []schedv1alpha1.Reservation) ([]RecordedDecision, types.UID, error) {
	var ctrl types.UID
	if pod != nil {
		if ref := metav1.GetControllerOf(pod); ref != nil {
			ctrl = ref.UID
		}
	}
	evs, err := c.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector(
		"reportingComponent", decision.ReportingController).String()})
	if err != nil {
		return nil, ctrl, request(err, "list", "", "events", ns)
	}
	type row struct {
		RecordedDecision
		ns, name  string
		owner     types.UID
		requested time.Time
	}
	var rows []row
	mine := false
	for i := range evs.Items {
		e := &evs.Items[i]
		if !console.IsDecisionReason(e.Reason) {
			continue
		}
		d, ok := console.DecisionOf(e)
		if !ok {
			continue
		}
		r := row{RecordedDecision: RecordedDecision{Time: console.EventTime(e), UID: d.Pod.UID, Node: d.Pod.Node, Plugin: d.Plugin,
			Profile: d.Profile, Reason: d.Reason, Verdict: d.Verdict}, ns: d.Pod.Namespace, name: d.Pod.Name, requested: console.RequestedAt(e, d)}
		if d.Blocker != nil {
			r.HeldBy, r.HeldMessage = d.Blocker.Gate, d.Blocker.Message
		}
		if p, ok := d.Predicted(); ok && d.Verdict != decision.VerdictHeld {
			r.PredictedNode, r.Score = p.Node, p.Score
		}
		if d.Reservation != nil {
			r.Reservation = d.Reservation.Name
		}
		if d.Verdict != decision.VerdictHeld {
			if d.Pod.Controller != nil {
				r.owner = types.UID(d.Pod.Controller.UID)
			} else if pod != nil && string(pod.UID) == d.Pod.UID {
				r.owner = ctrl
			}
		}
		mine = mine || r.name == name
		rows = append(rows, r)
	}
	if !mine {
		return nil, ctrl, nil
	}
	pl, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, ctrl, request(err, "list", "", "pods", ns)
	}
	pods := make([]*corev1.Pod, 0, len(pl.Items))
	for i := range pl.Items {
		pods = append(pods, &pl.Items[i])
	}
	slices.SortStableFunc(rows, func(a, b row) int { return a.Time.Compare(b.Time) })
	taken := map[types.UID]bool{}
	for i := range rows {
		r := &rows[i]
		var replacement string
		for _, m := range migs {
			if string(m.Status.PodUID) == r.UID && m.Status.ReplacementPod != "" {
				replacement = m.Status.ReplacementPod
			}
		}
		for _, rs := range ress {
			if replacement == "" && r.Reservation != "" && rs.Name == r.Reservation && rs.Status.BoundPod != nil {
				replacement = rs.Status.BoundPod.Name
			}
		}
		for _, p := range pods {
			if replacement != "" && p.Name == replacement && string(p.UID) != r.UID {
				taken[p.UID] = true
				r.ReplacementPod, r.ReplacementNode = p.Name, p.Spec.NodeName
			}
		}
	}
	var out []RecordedDecision
	for i := range rows {
		r := &rows[i]
		if r.owner != "" && r.ReplacementPod == "" {
			if p := console.Replacement(pods, r.ns, types.UID(r.UID), r.owner, r.requested, taken); p != nil {
				taken[p.UID] = true
				r.ReplacementPod, r.ReplacementNode = p.Name, p.Spec.NodeName
			}
		}
		if r.name == name {
			out = append(out, r.RecordedDecision)
			if pod == nil && r.owner != "" {
				ctrl = r.owner
			}
		}
	}
	return out, ctrl, nil
}

func migrationSummary(m *schedv1alpha1.PodMigration) MigrationSummary {
	return MigrationSummary{Name: m.Name, Phase: string(m.Status.Phase), Reason: m.Status.Reason, Message: m.Status.Message,
		Target: m.Status.TargetNode, ReplacementPod: m.Status.ReplacementPod, ReplacementNode: m.Status.ReplacementNode,
		Reservation: m.Status.ReservationName}
}

// ownsReservation reports whether one of r's owners is the pod (by name) or its controller (by UID).
func ownsReservation(r *schedv1alpha1.Reservation, pod string, ctrl types.UID) bool {
	for _, o := range r.Spec.Owners {
		if o.Pod != nil && o.Pod.Name == pod {
			return true
		}
		if o.Controller != nil && ctrl != "" && o.Controller.UID == ctrl {
			return true
		}
	}
	return false
}

// schedulingFailure is the message of the latest FailedScheduling Event, or else of the pod's
// PodScheduled=False condition.
func schedulingFailure(pod *corev1.Pod, evs []corev1.Event) string {
	var latest *corev1.Event
	for i := range evs {
		e := &evs[i]
		if e.Reason == "FailedScheduling" && (latest == nil || eventTime(e).After(eventTime(latest))) {
			latest = e
		}
	}
	if latest != nil {
		return latest.Message
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return c.Message
		}
	}
	return ""
}

func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

func printWhy(w io.Writer, r *WhyReport) error {
	var b strings.Builder
	if r.Gone {
		fmt.Fprintf(&b, "Pod %s/%s: gone (not found)", r.Namespace, r.Pod)
	} else {
		fmt.Fprintf(&b, "Pod %s/%s: %s", r.Namespace, r.Pod, r.Phase)
	}
	if r.Node != "" {
		fmt.Fprintf(&b, " on %s", r.Node)
	}
	b.WriteString("\n")
	for _, d := range r.Decisions {
		fmt.Fprintf(&b, "Descheduler (recorded %s): profile %s, plugin %s", d.Time.UTC().Format(time.RFC3339), d.Profile, d.Plugin)
		if d.Reason != "" {
			fmt.Fprintf(&b, " (%s)", d.Reason)
		}
		fmt.Fprintf(&b, "\n  verdict: %s", d.Verdict)
		if d.Node != "" {
			fmt.Fprintf(&b, " on %s", d.Node)
		}
		if d.HeldBy != "" {
			fmt.Fprintf(&b, ", held by %s", d.HeldBy)
			if d.HeldMessage != "" {
				fmt.Fprintf(&b, ": %s", d.HeldMessage)
			}
		}
		b.WriteString("\n")
		if d.PredictedNode != "" {
			fmt.Fprintf(&b, "  predicted node: %s", d.PredictedNode)
			if d.Score != nil {
				fmt.Fprintf(&b, " (score %d)", *d.Score)
			}
			b.WriteString("\n")
		}
		if d.Reservation != "" {
			fmt.Fprintf(&b, "  reservation: %s\n", d.Reservation)
		}
		if d.ReplacementPod != "" {
			fmt.Fprintf(&b, "  replacement: %s on %s\n", d.ReplacementPod, dashIfEmpty(d.ReplacementNode))
		} else if d.Verdict != decision.VerdictHeld {
			b.WriteString("  replacement: none found\n")
		}
	}
	if !r.Gone && r.Node == "" {
		if r.SchedulingFailure == "" {
			b.WriteString("Scheduler: no FailedScheduling event or Unschedulable condition (not tried yet, or another scheduler's pod)\n")
		} else {
			fmt.Fprintf(&b, "Scheduler: %s\n", r.SchedulingFailure)
			if len(r.Refusals) == 0 {
				b.WriteString("  no Accord plugin among the reasons\n")
			}
			for _, rf := range r.Refusals {
				fmt.Fprintf(&b, "  refused by %s: %s\n", rf.Plugin, rf.Reason)
			}
		}
	}
	if d := r.Descheduler; d != nil {
		if !d.Candidate {
			fmt.Fprintf(&b, "Descheduler (%s, dry run now): not a candidate of any profile\n", d.Policy)
		}
		for _, row := range d.Rows {
			fmt.Fprintf(&b, "Descheduler (%s, dry run now): profile %s, plugin %s nominates it", d.Policy, row.Profile, row.Plugin)
			if row.Reason != "" {
				fmt.Fprintf(&b, " (%s)", row.Reason)
			}
			fmt.Fprintf(&b, "\n  verdict: %s", row.Verdict)
			if row.BlockedBy != "" {
				fmt.Fprintf(&b, ", blocked by %s", row.BlockedBy)
			}
			b.WriteString("\n")
			if row.PredictedNode != "" {
				fmt.Fprintf(&b, "  predicted node: %s", row.PredictedNode)
				if row.Score != nil {
					fmt.Fprintf(&b, " (score %d", *row.Score)
					if row.CurrentNodeScore != nil {
						fmt.Fprintf(&b, ", current node %d", *row.CurrentNodeScore)
					}
					b.WriteString(")")
				}
				b.WriteString("\n")
			}
			if row.Message != "" {
				fmt.Fprintf(&b, "  %s\n", row.Message)
			}
		}
	}
	for _, m := range r.Migrations {
		fmt.Fprintf(&b, "PodMigration %s: %s", m.Name, dashIfEmpty(m.Phase))
		if m.Reason != "" {
			fmt.Fprintf(&b, " (%s)", m.Reason)
		}
		if m.ReplacementNode != "" {
			fmt.Fprintf(&b, ", replacement %s on %s", m.ReplacementPod, m.ReplacementNode)
		} else if m.Target != "" {
			fmt.Fprintf(&b, ", target %s", m.Target)
		}
		if m.Message != "" {
			fmt.Fprintf(&b, ": %s", m.Message)
		}
		b.WriteString("\n")
	}
	for _, rs := range r.Reservations {
		fmt.Fprintf(&b, "Reservation %s: %s", rs.Name, dashIfEmpty(rs.Phase))
		if rs.Node != "" {
			fmt.Fprintf(&b, " on %s", rs.Node)
		}
		if rs.Reason != "" {
			fmt.Fprintf(&b, " (%s)", rs.Reason)
		}
		if rs.Message != "" {
			fmt.Fprintf(&b, ": %s", rs.Message)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
