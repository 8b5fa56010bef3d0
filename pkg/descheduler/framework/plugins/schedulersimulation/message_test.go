package schedulersimulation

import (
	"testing"

	"github.com/accord-sched/accord/pkg/descheduler/simulator"
)

func TestParseEvictionMessageReadsEvictionMessage(t *testing.T) {
	for _, pred := range []simulator.Prediction{
		{Profile: "accord-scheduler", CurrentNode: "node-5", Feasible: true, Node: "node-2", Score: 155, CurrentNodeFeasible: true, CurrentNodeScore: 80},
		{Profile: "default-scheduler", CurrentNode: "a", Feasible: true, Node: "b", Score: 0},
	} {
		text := "Evicted by the Accord descheduler, plugin X (profile p): why; " + EvictionMessage(pred)
		got, ok := ParseEvictionMessage(text)
		if !ok || got.Node != pred.Node || got.Score != pred.Score || got.Profile != pred.Profile {
			t.Errorf("ParseEvictionMessage(%q) = %+v, %v; want node %s score %d profile %s", text, got, ok, pred.Node, pred.Score, pred.Profile)
		}
	}
	if got, ok := ParseEvictionMessage("node-5 no longer enables cpu"); ok {
		t.Errorf("a note without a prediction parsed as %+v", got)
	}
}
