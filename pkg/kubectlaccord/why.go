package kubectlaccord

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/klog/v2"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/descheduler/explain"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
	"github.com/accord-sched/accord/pkg/scheduler/plugins"
)

// WhyReport is what `kubectl accord why POD` reports.
type WhyReport struct {
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	Node      string `json:"node,omitempty"`
	Phase     string `json:"phase"`
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

// why reads the pod, its FailedScheduling Events, its PodMigrations and Reservations.
func why(ctx context.Context, c *Clients, ns, name string) (*WhyReport, error) {
	pod, err := c.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, request(err, "get", "", "pods", ns)
	}
	rep := &WhyReport{Namespace: ns, Pod: name, Node: pod.Spec.NodeName, Phase: string(pod.Status.Phase)}
	if pod.Spec.NodeName == "" {
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
	for _, m := range migs.Items {
		if m.Spec.PodName != name {
			continue
		}
		rep.Migrations = append(rep.Migrations, migrationSummary(&m))
	}
	ress, err := c.Accord.SchedulingV1alpha1().Reservations(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, request(err, "list", schedv1alpha1.SchemeGroupVersion.Group, "reservations", ns)
	}
	ctrl := metav1.GetControllerOf(pod)
	for _, r := range ress.Items {
		if !ownsReservation(&r, pod, ctrl) {
			continue
		}
		rep.Reservations = append(rep.Reservations, ReservationSummary{Name: r.Name, Phase: string(r.Status.Phase), Node: r.Status.NodeName,
			Reason: r.Status.Reason, Message: r.Status.Message})
	}
	return rep, nil
}

func migrationSummary(m *schedv1alpha1.PodMigration) MigrationSummary {
	return MigrationSummary{Name: m.Name, Phase: string(m.Status.Phase), Reason: m.Status.Reason, Message: m.Status.Message,
		Target: m.Status.TargetNode, ReplacementPod: m.Status.ReplacementPod, ReplacementNode: m.Status.ReplacementNode,
		Reservation: m.Status.ReservationName}
}

// ownsReservation reports whether one of r's owners is the pod (by name) or its controller.
func ownsReservation(r *schedv1alpha1.Reservation, pod *corev1.Pod, ctrl *metav1.OwnerReference) bool {
	for _, o := range r.Spec.Owners {
		if o.Pod != nil && o.Pod.Name == pod.Name {
			return true
		}
		if o.Controller != nil && ctrl != nil && o.Controller.UID == ctrl.UID {
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
	fmt.Fprintf(&b, "Pod %s/%s: %s", r.Namespace, r.Pod, r.Phase)
	if r.Node != "" {
		fmt.Fprintf(&b, " on %s", r.Node)
	}
	b.WriteString("\n")
	if r.Node == "" {
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
