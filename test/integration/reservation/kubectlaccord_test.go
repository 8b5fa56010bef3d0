package reservation

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/accord-sched/accord/test/harness"
	"github.com/accord-sched/accord/test/harness/inprocess"
)

// kubectlAccord builds the real kubectl-accord binary and returns a function running it against the
// control plane.
func kubectlAccord(t *testing.T) func(args ...string) (string, int) {
	t.Helper()
	bin := harness.BuildBinary(t, "github.com/accord-sched/accord/cmd/kubectl-accord")
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	return func(args ...string) (string, int) {
		t.Helper()
		return harness.RunBinary(t, 2*time.Minute, bin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	}
}

// TestKubectlAccordMigrate: `kubectl accord migrate --wait` against the in-process accord-scheduler
// and accord-descheduler (PodMigration controller, ReservationFirst): a move to a node that takes
// db-0 exits 0 with the replacement's node; a move to a node whose CR does not enable the pod's
// resource exits 4 with the scheduler's reason; `why` then tells both migrations, and with the
// policy runs the descheduler's dry-run verdict (db-0 is no candidate of the PodMigration-only policy).
func TestKubectlAccordMigrate(t *testing.T) {
	accord := kubectlAccord(t)
	startScheduler(t)
	c := &cluster{ns: env.CreateNamespace(t, "rsv-kacc")}
	c.crNodes(t, map[string]bool{"src": true}, "src")
	c.statefulSet(t)
	c.crNodes(t, map[string]bool{"dst": true}, "dst")
	c.crNodes(t, map[string]bool{"no": false}, "no")
	dst, no := c.nodes[1], c.nodes[2]
	policy := inprocess.WriteFile(t, "kacc-policy.yaml", migrationPolicy(c))
	schedCfg := inprocess.WriteFile(t, "scheduler-config.yaml", schedulerConfig)
	startDeschedulerWith(t, migrationPolicy(c), schedCfg, true)

	out, code := accord("migrate", "db-0", "-n", c.ns, "--to", no, "--wait", "--timeout", "60s")
	if code != 4 || !strings.Contains(out, "Failed (Unschedulable)") || !strings.Contains(out, "nodes are available") || !strings.Contains(out, string(exRes)) {
		t.Errorf("migrate --to %s: exit %d, want 4 and the scheduler's reason naming %s:\n%s", no, code, exRes, out)
	}
	out, code = accord("migrate", "db-0", "-n", c.ns, "--to", dst, "--wait", "--timeout", "90s")
	if code != 0 || !strings.Contains(out, "Running (Evicted)") || !strings.Contains(out, "Succeeded: replacement db-0 on "+dst) {
		t.Errorf("migrate --to %s: exit %d, want 0 and the replacement on %s:\n%s", dst, code, dst, out)
	}
	out, code = accord("why", "db-0", "-n", c.ns, "--policy", policy, "--scheduler-config", schedCfg)
	for _, want := range []string{"Running on " + dst, ": Failed (Unschedulable)", ": Succeeded", "replacement db-0 on " + dst,
		"Descheduler (" + policy + ", dry run now): not a candidate of any profile"} {
		if !strings.Contains(out, want) {
			t.Errorf("why db-0 lacks %q (exit %d):\n%s", want, code, out)
		}
	}
	if code != 0 {
		t.Errorf("why db-0: exit %d", code)
	}

	// dst stops offering the resource db-0 requests: under a NodeCRDResourceFit policy db-0 is now a
	// candidate, and why gives explain's verdict, with the node its replacement would go to (src).
	crs := env.Accord.SchedulingV1alpha1().ClusterScopedResources()
	cr, err := crs.Get(context.Background(), dst, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cr.Spec.ResourcesFilter[exRes] = false
	if _, err := crs.Update(context.Background(), cr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	violations := inprocess.WriteFile(t, "kacc-violations.yaml", rsvPolicy(c, "NodeCRDResourceFit", "EvictionAPI", ""))
	out, code = accord("why", "db-0", "-n", c.ns, "--policy", violations, "--scheduler-config", schedCfg)
	for _, want := range []string{"plugin NodeCRDResourceFit nominates it", "verdict: evict", "predicted node: " + c.nodes[0]} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("why db-0 with the violations policy lacks %q (exit %d):\n%s", want, code, out)
		}
	}
}
