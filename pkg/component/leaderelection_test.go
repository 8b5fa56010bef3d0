package component

import (
	"strings"
	"testing"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
)

// The leader gauge is kube-scheduler's leader_election_master_status{name}: 0 for a replica that
// waits, 1 while it leads, 0 again once it stops; a nil gauge is allowed.
func TestLeaderStatus(t *testing.T) {
	reg := metrics.NewKubeRegistry()
	status := NewLeaderStatus()
	reg.MustRegister(status)
	want := func(v string) {
		t.Helper()
		exp := `# HELP leader_election_master_status [ALPHA] 1 while this replica is the leader of the Lease ` + "`name`" + `, 0 while it is not.
# TYPE leader_election_master_status gauge
leader_election_master_status{name="accord-descheduler"} ` + v + "\n"
		if err := testutil.GatherAndCompare(reg, strings.NewReader(exp), "leader_election_master_status"); err != nil {
			t.Error(err)
		}
	}
	setLeading(status, "accord-descheduler", false)
	want("0")
	setLeading(status, "accord-descheduler", true)
	want("1")
	setLeading(status, "accord-descheduler", false)
	want("0")
	setLeading(nil, "accord-descheduler", true)
}
