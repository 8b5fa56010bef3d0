package kubectlaccord

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
)

// ExitMigrationFailed: `migrate --wait` followed the PodMigration to Failed or Aborted.
const ExitMigrationFailed = 4

// migrationFailedError is a PodMigration that ended Failed or Aborted (ExitMigrationFailed).
type migrationFailedError struct{ m MigrationSummary }

func (e *migrationFailedError) Error() string {
	msg := fmt.Sprintf("PodMigration %s %s", e.m.Name, e.m.Phase)
	if e.m.Reason != "" {
		msg += " (" + e.m.Reason + ")"
	}
	if e.m.Message != "" {
		msg += ": " + e.m.Message
	}
	return msg
}

type migrateOptions struct {
	*Options
	to      string
	wait    bool
	timeout time.Duration
	poll    time.Duration
}

func newMigrateCommand(o *Options) *cobra.Command {
	mo := &migrateOptions{Options: o, poll: time.Second}
	cmd := &cobra.Command{
		Use:   "migrate POD",
		Short: "Move a pod safely: create a PodMigration and, with --wait, follow it to its end",
		Long: `migrate creates a PodMigration for the pod (accord-descheduler moves it: by default it reserves
the replacement's place before evicting). With --wait it follows the migration to its end, printing
each phase, and exits 0 when it Succeeded and 4 when it Failed or was Aborted, with the reason the
descheduler or the scheduler gave (for an impossible --to, the scheduler's "0/N nodes are
available" message).`,
		Example: `  kubectl accord migrate web-0 -n shop --wait
  kubectl accord migrate web-0 -n shop --to node-3 --wait --timeout 5m`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, _, err := mo.Flags.ToRawKubeConfigLoader().Namespace()
			if err != nil {
				return err
			}
			c, err := mo.clients()
			if err != nil {
				return err
			}
			return mo.migrate(cmd.Context(), c, ns, args[0])
		},
	}
	cmd.Flags().StringVar(&mo.to, "to", "", "The node the replacement must go to (spec.targetNode); empty: where the scheduler simulation predicts")
	cmd.Flags().BoolVar(&mo.wait, "wait", false, "Follow the migration until it Succeeded, Failed or was Aborted")
	cmd.Flags().DurationVar(&mo.timeout, "timeout", schedv1alpha1.DefaultPodMigrationDeadline+5*time.Minute,
		"With --wait, how long to follow the migration before giving up (the migration keeps going)")
	return cmd
}

func (mo *migrateOptions) migrate(ctx context.Context, c *Clients, ns, pod string) error {
	client := c.Accord.SchedulingV1alpha1().PodMigrations(ns)
	m, err := client.Create(ctx, &schedv1alpha1.PodMigration{
		ObjectMeta: metav1.ObjectMeta{GenerateName: pod + "-"},
		Spec:       schedv1alpha1.PodMigrationSpec{PodName: pod, TargetNode: mo.to},
	}, metav1.CreateOptions{})
	if err != nil {
		return request(err, "create", schedv1alpha1.SchemeGroupVersion.Group, "podmigrations", ns)
	}
	out := mo.Streams.Out
	fmt.Fprintf(out, "podmigration.%s/%s created\n", schedv1alpha1.SchemeGroupVersion.Group, m.Name)
	if !mo.wait {
		return nil
	}
	var last string
	var final *schedv1alpha1.PodMigration
	err = wait.PollUntilContextTimeout(ctx, mo.poll, mo.timeout, true, func(ctx context.Context) (bool, error) {
		cur, err := client.Get(ctx, m.Name, metav1.GetOptions{})
		if err != nil {
			return false, request(err, "get", schedv1alpha1.SchemeGroupVersion.Group, "podmigrations", ns)
		}
		if line := progressLine(cur); cur.Status.Phase != "" && line != last {
			fmt.Fprintln(out, line)
			last = line
		}
		if cur.Status.Phase.Finished() {
			final = cur
			return true, nil
		}
		return false, nil
	})
	if final == nil {
		if err != nil && !wait.Interrupted(err) {
			return err
		}
		return fmt.Errorf("PodMigration %s/%s not finished after %s (last: %s); it goes on: kubectl accord why %s -n %s", ns, m.Name, mo.timeout, last, pod, ns)
	}
	s := migrationSummary(final)
	if final.Status.Phase != schedv1alpha1.PodMigrationSucceeded {
		mo.printReservation(ctx, c, ns, final.Status.ReservationName, out)
		return &migrationFailedError{m: s}
	}
	return nil
}

// printReservation adds the reservation's own reason (the scheduler's message when it could not be
// placed) to a failed migration's story; it is best effort, the migration's reason stands alone.
func (mo *migrateOptions) printReservation(ctx context.Context, c *Clients, ns, name string, out io.Writer) {
	if name == "" {
		return
	}
	r, err := c.Accord.SchedulingV1alpha1().Reservations(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		fmt.Fprintf(out, "Reservation %s: %v\n", name, request(err, "get", schedv1alpha1.SchemeGroupVersion.Group, "reservations", ns))
		return
	}
	fmt.Fprintf(out, "Reservation %s: %s", name, dashIfEmpty(string(r.Status.Phase)))
	if r.Status.Reason != "" {
		fmt.Fprintf(out, " (%s)", r.Status.Reason)
	}
	if r.Status.Message != "" {
		fmt.Fprintf(out, ": %s", r.Status.Message)
	}
	fmt.Fprintln(out)
}

// progressLine is one line of a migration's progress.
func progressLine(m *schedv1alpha1.PodMigration) string {
	s := m.Status
	line := string(s.Phase)
	if s.Reason != "" && s.Reason != string(s.Phase) {
		line += " (" + s.Reason + ")"
	}
	switch {
	case s.ReplacementNode != "":
		line += fmt.Sprintf(": replacement %s on %s", s.ReplacementPod, s.ReplacementNode)
	case s.TargetNode != "":
		line += fmt.Sprintf(": %s -> %s", dashIfEmpty(s.SourceNode), s.TargetNode)
	}
	if s.Message != "" && s.Phase != schedv1alpha1.PodMigrationSucceeded {
		line += ": " + s.Message
	}
	return line
}
