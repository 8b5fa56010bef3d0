package nodecrdresourcefit

import (
	"testing"

	"github.com/accord-sched/accord/apis/config"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/plugintest"
)

// NodeVerdict is Violation on the given node's CR: what Deschedule would evict the pod for there.
func TestNodeVerdict(t *testing.T) {
	objs, crs := cluster()
	env := plugintest.New(t, plugintest.Options{CRs: crs}, objs...)
	p := build(t, env, &NodeCRDResourceFitArgs{MissingCRPolicy: config.MissingCRPolicyReject})
	pod := reqPod("ok-1", "n1", exMem)
	plain := reqPod("plain-1", "n1")
	for _, tc := range []struct {
		name, node string
		plain      bool
		want       bool
	}{
		{"enabled", "n1", false, false},
		{"not enabled", "n2", false, true},
		{"no CR under Reject", "n3", false, true},
		{"plain pod on a cpu-only CR", "n2", true, false},
	} {
		pd := pod
		if tc.plain {
			pd = plain
		}
		if got, why := p.NodeVerdict(pd, node(tc.node)); got != tc.want {
			t.Errorf("%s: flagged=%v (%s), want %v", tc.name, got, why, tc.want)
		}
	}
	p.args.MissingCRPolicy = config.MissingCRPolicyIgnore
	if got, _ := p.NodeVerdict(pod, node("n3")); got {
		t.Error("no CR under Ignore flagged")
	}
}
