package console

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/accord-sched/accord/pkg/descheduler/evictions"
	"github.com/accord-sched/accord/pkg/descheduler/framework/decision"
)

// decisionEvent is the descheduler's Event of a decision on p (its note says nothing the console
// reads).
func decisionEvent(reason string, p *corev1.Pod, at time.Time, plugin, profile, why, verdict string, edit ...func(*decision.Decision)) *corev1.Event {
	d := decision.Decision{Version: decision.Version, Pod: decision.Pod{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID), Node: p.Spec.NodeName},
		Plugin: plugin, Profile: profile, Reason: why, Verdict: verdict}
	for _, f := range edit {
		f(&d)
	}
	js, err := decision.Marshal(d)
	if err != nil {
		panic(err)
	}
	e := event(reason, p, at, "a note for people")
	e.ReportingController = decision.ReportingController
	e.Annotations = map[string]string{decision.Annotation: js}
	return e
}

func predicted(node string, score int64) func(*decision.Decision) {
	return func(d *decision.Decision) {
		d.Predictions = append(d.Predictions, decision.Prediction{Judge: "SchedulerSimulation", Node: node, Score: &score, CurrentNode: d.Pod.Node})
	}
}

func heldBy(gate, why string) func(*decision.Decision) {
	return func(d *decision.Decision) { d.Blocker = &decision.Blocker{Gate: gate, Message: why} }
}

// An Event's author is untrusted: the timeline shows a decision only from an Event of the
// descheduler, in the namespace of its pod, about that pod, whose decision decodes; the others are
// skipped (and logged), never half-read.
func TestEvictionTimelineTrustsOnlyTheDeschedulersDecisions(t *testing.T) {
	at := now.Add(-30 * time.Second)
	good := pod("good", "node-5", "", now.Add(-time.Hour))
	bad := func(name string, edit func(*corev1.Event)) *corev1.Event {
		p := pod(name, "node-5", "", now.Add(-time.Hour))
		e := decisionEvent(evictions.ReasonDescheduled, p, at, "LowNodeLoad", "accord", "hot", decision.VerdictEvicted, predicted("node-1", 9))
		edit(e)
		return e
	}
	other := pod("other", "node-5", "", now.Add(-time.Hour))
	s := newTestState(t, good,
		decisionEvent(evictions.ReasonDescheduled, good, at, "LowNodeLoad", "accord", "hot", decision.VerdictEvicted, predicted("node-2", 7)),
		bad("forged-controller", func(e *corev1.Event) { e.ReportingController = "someone-else" }),
		bad("no-annotation", func(e *corev1.Event) { e.Annotations = nil }),
		bad("malformed", func(e *corev1.Event) { e.Annotations[decision.Annotation] = `{"version":"v1","pod":` }),
		bad("unknown-field", func(e *corev1.Event) {
			e.Annotations[decision.Annotation] = `{"version":"v1","pod":{"namespace":"demo","name":"unknown-field","uid":"uid-unknown-field"},"plugin":"P","profile":"p","verdict":"Evicted","extra":1}`
		}),
		bad("v2", func(e *corev1.Event) {
			e.Annotations[decision.Annotation] = `{"version":"v2","pod":{"namespace":"demo","name":"v2","uid":"uid-v2"},"plugin":"P","profile":"p","verdict":"Evicted"}`
		}),
		bad("held-without-blocker", func(e *corev1.Event) {
			e.Annotations[decision.Annotation] = `{"version":"v1","pod":{"namespace":"demo","name":"held-without-blocker","uid":"uid-held-without-blocker"},"plugin":"P","profile":"p","verdict":"Held"}`
		}),
		// A decision about another pod than the Event's.
		bad("about-another", func(e *corev1.Event) {
			d, _ := decision.Unmarshal(e.Annotations[decision.Annotation])
			d.Pod.Name, d.Pod.UID = other.Name, string(other.UID)
			js, _ := decision.Marshal(d)
			e.Annotations[decision.Annotation] = js
		}),
		// An Event in another namespace than its pod's.
		bad("elsewhere", func(e *corev1.Event) { e.Namespace = "tenant" }),
	)
	v := s.buildView(now)
	if len(v.Evictions) != 1 || v.Evictions[0].Pod != "good" || v.Evictions[0].PredictedNode != "node-2" || *v.Evictions[0].Score != 7 {
		t.Fatalf("timeline %+v, want the good decision only", v.Evictions)
	}
}

// The Event of an eviction is recorded once the eviction returned, which can be a second later than
// its replacement's creation (creation timestamps are whole seconds): the replacement is matched
// from the time the eviction was requested, which the decision carries. TestConsoleInChromium
// failed once in 20 runs on this: the newest row's replacement stayed "-".
func TestEvictionTimelineMatchesReplacementFromTheRequest(t *testing.T) {
	const rs = "rs-uid"
	requested := now.Add(-30 * time.Second).Truncate(time.Second).Add(900 * time.Millisecond)
	evicted := pod("m-1", "node-5", rs, now.Add(-time.Hour))
	replacement := pod("m-2", "node-2", rs, requested.Truncate(time.Second))
	s := newTestState(t, evicted, replacement,
		decisionEvent(evictions.ReasonDescheduled, evicted, requested.Add(300*time.Millisecond), "NodeCRDResourceFit", "accord", "r", decision.VerdictEvicted,
			func(d *decision.Decision) { d.RequestedAt = &requested }))
	s.podGone(evicted)
	v := s.buildView(now)
	if len(v.Evictions) != 1 || v.Evictions[0].Replacement != "m-2" || v.Evictions[0].ReplacementNode != "node-2" {
		t.Fatalf("timeline %+v, want m-1 replaced by m-2 on node-2", v.Evictions)
	}
}
