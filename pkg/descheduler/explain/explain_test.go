package explain

import (
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	score, here := int64(312), int64(280)
	rows := []Row{
		{Profile: "p", Plugin: "RemoveDuplicates", Namespace: "ns", Pod: "a", Node: "n1", Reason: "3 pods\nof owner", Verdict: VerdictEvict,
			SimulationReason: "admitted", PredictedNode: "n2", Score: &score, CurrentNodeScore: &here, Message: "predicted on n2"},
		{Profile: "p", Plugin: "LowNodeUtilization", Namespace: "ns", Pod: "b", Node: "n1", Verdict: VerdictBlocked, BlockedBy: "SchedulerSimulation", SimulationReason: "same_node"},
	}
	var b strings.Builder
	if err := Write(&b, rows, "table"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "VERDICT") || !strings.Contains(lines[1], "312 (here 280)") ||
		!strings.Contains(lines[1], "3 pods of owner") || !strings.Contains(lines[2], "SchedulerSimulation/same_node") {
		t.Errorf("table:\n%s", b.String())
	}
	b.Reset()
	if err := Write(&b, nil, "json"); err != nil || strings.TrimSpace(b.String()) != "[]" {
		t.Errorf("empty json = %q, %v", b.String(), err)
	}
	if err := Write(&b, rows, "yaml"); err == nil {
		t.Error("unknown format accepted")
	}
}
