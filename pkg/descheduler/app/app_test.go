package app

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

type noop struct{}

func (noop) Name() string                                                 { return "Noop" }
func (noop) Deschedule(context.Context, []*corev1.Node) *framework.Status { return nil }

func newNoop(context.Context, runtime.Object, framework.Handle) (framework.Plugin, error) {
	return noop{}, nil
}

// The upstream descheduler's Deployment arguments parse unchanged.
func TestUpstreamFlagsParse(t *testing.T) {
	cmd := NewDeschedulerCommand()
	args := []string{
		"--policy-config-file=/policy-dir/policy.yaml", "--descheduling-interval=5m", "--dry-run",
		"--kubeconfig=/etc/kubeconfig", "--client-connection-qps=20", "--client-connection-burst=40",
		"--leader-elect=true", "--leader-elect-lease-duration=15s", "--leader-elect-renew-deadline=10s",
		"--leader-elect-retry-period=2s", "--leader-elect-resource-name=descheduler",
		"--leader-elect-resource-namespace=kube-system", "--secure-port=10258", "-v=3", "--event-driven",
	}
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	for flag, want := range map[string]string{
		"descheduling-interval": "5m0s", "dry-run": "true", "client-connection-qps": "20", "leader-elect": "true",
		"secure-port": "10258", "v": "3", "event-driven": "true", "leader-elect-resource-name": "descheduler",
	} {
		if got := cmd.Flags().Lookup(flag).Value.String(); got != want {
			t.Errorf("--%s = %s, want %s", flag, got, want)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	o := NewOptions()
	err := o.Validate()
	if err == nil || !strings.Contains(err.Error(), "--policy-config-file is required") {
		t.Errorf("missing policy: %v", err)
	}
	o.PolicyConfigFile, o.DeschedulingInterval = "p.yaml", -time.Second
	o.LeaderElection.LeaderElect = true
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "must not be negative") {
		t.Errorf("negative interval: %v", err)
	}
	o.DeschedulingInterval = 0
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--leader-elect needs") {
		t.Errorf("leader election with one cycle: %v", err)
	}
	o.EventDriven = true
	if err := o.Validate(); err != nil {
		t.Errorf("valid options: %v", err)
	}
}

func TestExplainSubcommand(t *testing.T) {
	cmd := NewDeschedulerCommand()
	explain, _, err := cmd.Find([]string{"explain"})
	if err != nil || explain.Name() != "explain" || explain.Flags().Lookup("scheduler-config-file") == nil || explain.Flags().ShorthandLookup("o") == nil {
		t.Errorf("explain subcommand: %v", err)
	}
}
