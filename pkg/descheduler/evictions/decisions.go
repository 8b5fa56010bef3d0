package evictions

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/pkg/descheduler/framework/decision"
)

// DecisionRecorder is implemented by an events.EventRecorder that can write a decision on the Event
// it records (NewDecisionSink's recorder). The evictor records its decisions' Events through it;
// with a plain recorder they carry their note only.
type DecisionRecorder interface {
	events.EventRecorder
	RecordDecision(pod *corev1.Pod, eventtype, reason, note string, d decision.Decision)
}

// decisionAction is the action of the evictor's Events.
const decisionAction = "Descheduling"

// pendingTTL bounds how long a decision waits for its Event's creation: an Event the recorder folds
// into the series of an earlier one is patched, never created, and keeps the first decision (as it
// keeps the first note).
const pendingDecisionTTL = time.Minute

// DecisionSink is an events.EventSink that writes, on each Event a decision was recorded for, the
// decision as JSON in its decision.Annotation: the events recorder builds Events of a note alone,
// so the decision waits here, keyed by the pod's UID, the Event's reason and note, for the Event's
// creation.
type DecisionSink struct {
	events.EventSink
	mu      sync.Mutex
	pending map[pendingKey]pendingDecision
}

type pendingKey struct {
	uid          types.UID
	reason, note string
}

type pendingDecision struct {
	json string
	at   time.Time
}

// NewDecisionSink wraps sink.
func NewDecisionSink(sink events.EventSink) *DecisionSink {
	return &DecisionSink{EventSink: sink, pending: map[pendingKey]pendingDecision{}}
}

// Create creates event, with the decision recorded for it in its annotations.
func (s *DecisionSink) Create(ctx context.Context, event *eventsv1.Event) (*eventsv1.Event, error) {
	k := pendingKey{uid: event.Regarding.UID, reason: event.Reason, note: event.Note}
	s.mu.Lock()
	p, ok := s.pending[k]
	delete(s.pending, k)
	s.mu.Unlock()
	if ok {
		if event.Annotations == nil {
			event.Annotations = map[string]string{}
		}
		event.Annotations[decision.Annotation] = p.json
	}
	return s.EventSink.Create(ctx, event)
}

func (s *DecisionSink) expect(uid types.UID, reason, note, json string) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, p := range s.pending {
		if now.Sub(p.at) > pendingDecisionTTL {
			delete(s.pending, k)
		}
	}
	s.pending[pendingKey{uid, reason, note}] = pendingDecision{json: json, at: now}
}

// Recorder returns rec as a DecisionRecorder writing its decisions through s; rec must be a
// recorder of a broadcaster recording to s.
func (s *DecisionSink) Recorder(rec events.EventRecorder) DecisionRecorder {
	return &decisionRecorder{EventRecorder: rec, sink: s}
}

type decisionRecorder struct {
	events.EventRecorder
	sink *DecisionSink
}

func (r *decisionRecorder) RecordDecision(pod *corev1.Pod, eventtype, reason, note string, d decision.Decision) {
	if js, err := decision.Marshal(d); err != nil {
		// A bug of the evictor: the Event goes without its decision, which readers then skip.
		klog.Background().Error(err, "Decision not recorded on its Event", "pod", klog.KObj(pod), "reason", reason)
	} else {
		r.sink.expect(pod.UID, reason, note, js)
	}
	r.Eventf(pod, nil, eventtype, reason, decisionAction, "%s", note)
}

// newDecision is the evictor's decision on pod.
func (e *ProfileEvictor) newDecision(pod *corev1.Pod, plugin, reason, verdict string) decision.Decision {
	d := decision.Decision{Version: decision.Version,
		Pod:    decision.Pod{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID), Node: pod.Spec.NodeName},
		Plugin: plugin, Profile: e.Profile, Reason: reason, Verdict: verdict}
	if c := metav1.GetControllerOf(pod); c != nil {
		d.Pod.Controller = &decision.Controller{Kind: c.Kind, Name: c.Name, UID: string(c.UID)}
	}
	return d
}

// recordDecision records the Event of decision d on pod (none without a recorder): its note, and
// the decision itself when the recorder is a DecisionRecorder.
func (e *ProfileEvictor) recordDecision(pod *corev1.Pod, eventtype, reason, note string, d decision.Decision) {
	switch rec := e.Recorder.(type) {
	case nil:
	case DecisionRecorder:
		rec.RecordDecision(pod, eventtype, reason, note, d)
	default:
		rec.Eventf(pod, nil, eventtype, reason, decisionAction, "%s", note)
	}
}
