package decision

import (
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	score, cur := int64(155), int64(3)
	d := Decision{Version: Version, Pod: Pod{Namespace: "ns", Name: "p", UID: "u", Node: "n1", Controller: &Controller{Kind: "ReplicaSet", Name: "rs", UID: "c"}}, Plugin: "LowNodeLoad", Profile: "accord",
		Reason: "hot", Verdict: VerdictEvicted, Reservation: &Reservation{Name: "r", Node: "n2"},
		Predictions: []Prediction{{Judge: "SchedulerSimulation", Node: "n2", Score: &score, CurrentNode: "n1", CurrentNodeScore: &cur, Message: "m"}}}
	js, err := Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Unmarshal(js)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := got.Predicted(); !ok || p.Node != "n2" || *p.Score != 155 || got.Reservation.Name != "r" ||
		got.Pod.Name != "p" || got.Pod.Node != "n1" || got.Pod.Controller == nil || *got.Pod.Controller != *d.Pod.Controller {
		t.Fatalf("round trip: %+v", got)
	}
}

// Unmarshal reads what a tenant may have written: strictly, and only version v1.
func TestUnmarshalRefuses(t *testing.T) {
	ok := `{"version":"v1","pod":{"namespace":"ns","name":"p","uid":"u"},"plugin":"P","profile":"p","verdict":"Evicted"}`
	if _, err := Unmarshal(ok); err != nil {
		t.Fatalf("valid decision refused: %v", err)
	}
	for name, tc := range map[string]struct{ js, want string }{
		"not JSON":           {`{"version":`, "unexpected end"},
		"unknown field":      {strings.Replace(ok, `"verdict"`, `"extra":1,"verdict"`, 1), "unknown field"},
		"other version":      {strings.Replace(ok, `"v1"`, `"v2"`, 1), "version"},
		"no version":         {strings.Replace(ok, `"version":"v1",`, "", 1), "version"},
		"two values":         {ok + ok, "after top-level value"},
		"unknown verdict":    {strings.Replace(ok, `"Evicted"`, `"Gone"`, 1), "verdict"},
		"held, no blocker":   {strings.Replace(ok, `"Evicted"`, `"Held"`, 1), "blocker"},
		"controller, no uid": {strings.Replace(ok, `"uid":"u"`, `"uid":"u","controller":{"kind":"ReplicaSet","name":"rs","uid":""}`, 1), "pod.controller.uid"},
		"no pod":             {`{"version":"v1","plugin":"P","verdict":"Evicted"}`, "pod"},
		"node without score": {strings.Replace(ok, `"verdict"`, `"predictions":[{"judge":"J","node":"n"}],"verdict"`, 1), "predictions[0]"},
		"too big":            {`{"version":"v1","reason":"` + strings.Repeat("x", MaxSize) + `"}`, "bytes"},
	} {
		if _, err := Unmarshal(tc.js); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one containing %q", name, err, tc.want)
		}
	}
}
