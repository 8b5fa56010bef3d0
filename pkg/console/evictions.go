package console

import (
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/pkg/descheduler/evictions"
	"github.com/accord-sched/accord/pkg/descheduler/framework/decision"
)

// maxEvictions is how many evictions the timeline shows (the newest).
const maxEvictions = 100

// Eviction is one row of the eviction timeline, read from a Descheduled Event.
type Eviction struct {
	Time      time.Time `json:"time"`
	Namespace string    `json:"namespace"`
	Pod       string    `json:"pod"`
	// Node is the node the pod was evicted from ("" when the console never saw the pod).
	Node    string `json:"node,omitempty"`
	Plugin  string `json:"plugin"`
	Profile string `json:"profile"`
	Reason  string `json:"reason"`
	// PredictedNode and Score are the scheduler simulation's prediction, when the Event has one.
	PredictedNode string `json:"predictedNode,omitempty"`
	Score         *int64 `json:"score,omitempty"`
	// Replacement is the pod of the same controller created after the eviction (for a pod a
	// PodMigration moved, the pod that consumed its reservation, which the migration names), and
	// ReplacementNode where it landed ("" while it is pending).
	Replacement     string `json:"replacement,omitempty"`
	ReplacementNode string `json:"replacementNode,omitempty"`
	// Held, when set, says the pod was not evicted: the descheduler held it ("workload budget" or
	// "eviction window", from an EvictionHeld Event); Reason then says why.
	Held string `json:"held,omitempty"`
	// Mode, when set, says the pod was not evicted through the Eviction API: "soft-evicted" (a
	// SoftEvicted Event: annotated for its controller to move) or "in background" (an
	// EvictionInBackground Event: its controller evicts it).
	Mode string `json:"mode,omitempty"`
}

// Modes of an eviction row, as the page shows them.
const (
	modeSoftEvicted  = "soft-evicted"
	modeInBackground = "in background"
)

// decisionReasons are the reasons of the descheduler's Events that carry a decision.
var decisionReasons = []string{evictions.ReasonDescheduled, evictions.ReasonSoftEvicted, evictions.ReasonEvictionInBackground, evictions.ReasonEvictionHeld}

// evictions reads the decisions of the descheduler's Descheduled, SoftEvicted, EvictionInBackground
// and EvictionHeld Events (DecisionOf), newest first; pods are the live pods, where the replacements
// are looked for.
func (s *state) evictions(pods []*corev1.Pod) []Eviction {
	type row struct {
		Eviction
		owner types.UID
		uid   types.UID
		// requested is when the eviction was requested (the decision's RequestedAt, else the
		// Event's time): its replacement is created after it.
		requested time.Time
	}
	var rows []row
	for _, reason := range decisionReasons {
		objs, _ := s.events.ByIndex(eventByReason, reason)
		for _, o := range objs {
			e := o.(*corev1.Event)
			d, ok := DecisionOf(e)
			if !ok {
				continue
			}
			r := row{Eviction: Eviction{Time: eventTime(e), Namespace: e.InvolvedObject.Namespace, Pod: e.InvolvedObject.Name,
				Plugin: d.Plugin, Profile: d.Profile, Reason: d.Reason}, uid: e.InvolvedObject.UID, requested: RequestedAt(e, d)}
			switch d.Verdict {
			case decision.VerdictSoftEvicted:
				r.Mode = modeSoftEvicted
			case decision.VerdictInBackground:
				r.Mode = modeInBackground
			case decision.VerdictHeld:
				r.Held, r.Reason = d.Blocker.Gate, d.Blocker.Message
			}
			if pred, ok := d.Predicted(); ok && d.Verdict != decision.VerdictHeld {
				r.PredictedNode, r.Score = pred.Node, pred.Score
			}
			if rec, ok := s.record(r.uid); ok && rec.Namespace == r.Namespace {
				r.Node = rec.Node
				if d.Verdict != decision.VerdictHeld {
					r.owner = rec.Owner
				}
			}
			rows = append(rows, r)
		}
	}
	// Oldest first, so that each eviction of a controller's pods takes the first replacement
	// created after it that an earlier eviction did not take. A pod a PodMigration moved takes the
	// replacement that consumed its reservation, which the migration names: two pods of one
	// controller moved at once then each show the replacement on their own reservation's node.
	slices.SortFunc(rows, func(a, b row) int { return a.Time.Compare(b.Time) })
	taken := map[types.UID]bool{}
	migrated := s.migratedReplacements()
	for i := range rows {
		r := &rows[i]
		m, ok := migrated[r.uid]
		if !ok || m.Namespace != r.Namespace {
			continue
		}
		for _, p := range pods {
			if p.Namespace == m.Namespace && p.Name == m.Name && p.UID != r.uid {
				taken[p.UID] = true
				r.Replacement, r.ReplacementNode = p.Name, p.Spec.NodeName
			}
		}
	}
	for i := range rows {
		r := &rows[i]
		if r.owner == "" || r.Replacement != "" {
			continue
		}
		if best := Replacement(pods, r.Namespace, r.uid, r.owner, r.requested, taken); best != nil {
			taken[best.UID] = true
			r.Replacement, r.ReplacementNode = best.Name, best.Spec.NodeName
		}
	}
	out := make([]Eviction, 0, min(len(rows), maxEvictions))
	for i := len(rows) - 1; i >= 0 && len(out) < maxEvictions; i-- {
		out = append(out, rows[i].Eviction)
	}
	return out
}

// IsDecisionReason reports whether reason is the reason of a descheduler Event that carries a
// decision (Descheduled, SoftEvicted, EvictionInBackground, EvictionHeld).
func IsDecisionReason(reason string) bool { return slices.Contains(decisionReasons, reason) }

// RequestedAt is when the eviction decision d, read from Event e, was requested: d's RequestedAt,
// else (or when later) the Event's time. The pod's replacement is created after it.
func RequestedAt(e *corev1.Event, d decision.Decision) time.Time {
	t := eventTime(e)
	if d.RequestedAt != nil && d.RequestedAt.Before(t) {
		return *d.RequestedAt
	}
	return t
}

// Replacement returns the replacement of the evicted pod uid of namespace ns, controlled by owner,
// whose eviction was requested at requested: the oldest of pods in ns controlled by owner, created
// no earlier than requested (to the second, a creationTimestamp's precision), other than the pod
// itself and not in taken (the replacements earlier evictions took); nil when there is none.
func Replacement(pods []*corev1.Pod, ns string, uid, owner types.UID, requested time.Time, taken map[types.UID]bool) *corev1.Pod {
	var best *corev1.Pod
	for _, p := range pods {
		if p.UID == uid || p.Namespace != ns || taken[p.UID] || !ownedBy(p, owner) || p.CreationTimestamp.Time.Before(requested.Truncate(time.Second)) {
			continue
		}
		if best == nil || p.CreationTimestamp.Before(&best.CreationTimestamp) {
			best = p
		}
	}
	return best
}

// migratedReplacements maps the UID of each pod a PodMigration moved to the replacement that
// consumed its reservation (the migration's status), for the migrations that name both.
func (s *state) migratedReplacements() map[types.UID]types.NamespacedName {
	out := map[types.UID]types.NamespacedName{}
	if s.migrations == nil {
		return out
	}
	ms, _ := s.migrations.List(labels.Everything())
	for _, m := range ms {
		if m.Status.PodUID != "" && m.Status.ReplacementPod != "" {
			out[m.Status.PodUID] = types.NamespacedName{Namespace: m.Namespace, Name: m.Status.ReplacementPod}
		}
	}
	return out
}

// DecisionOf reads the decision an Event carries. An Event's author chooses every field of it: a
// decision is read only from an Event of the descheduler (its reportingController), in the
// namespace of the pod it is about, and about that pod; an Event that says otherwise, or whose
// decision does not decode (strictly, version v1), is skipped, with the reason logged once.
func DecisionOf(e *corev1.Event) (decision.Decision, bool) {
	if e.ReportingController != decision.ReportingController || !sameNamespace(e) {
		return decision.Decision{}, false
	}
	js, ok := e.Annotations[decision.Annotation]
	if !ok {
		skipped(e, "no decision annotation")
		return decision.Decision{}, false
	}
	d, err := decision.Unmarshal(js)
	if err != nil {
		skipped(e, "malformed decision: "+err.Error())
		return decision.Decision{}, false
	}
	if d.Pod.Namespace != e.InvolvedObject.Namespace || d.Pod.Name != e.InvolvedObject.Name || types.UID(d.Pod.UID) != e.InvolvedObject.UID {
		skipped(e, fmt.Sprintf("the decision is about pod %s/%s (UID %s), the Event about %s/%s (UID %s)",
			d.Pod.Namespace, d.Pod.Name, d.Pod.UID, e.InvolvedObject.Namespace, e.InvolvedObject.Name, e.InvolvedObject.UID))
		return decision.Decision{}, false
	}
	return d, true
}

// maxSkipped bounds the Events whose skipping was logged (then the set starts over).
const maxSkipped = 1024

var skippedEvents = struct {
	sync.Mutex
	logged map[types.UID]bool
}{logged: map[types.UID]bool{}}

// skipped logs, once per Event, why its decision is not shown.
func skipped(e *corev1.Event, why string) {
	skippedEvents.Lock()
	defer skippedEvents.Unlock()
	if skippedEvents.logged[e.UID] {
		return
	}
	if len(skippedEvents.logged) >= maxSkipped {
		clear(skippedEvents.logged)
	}
	skippedEvents.logged[e.UID] = true
	klog.Background().Info("Eviction Event not shown", "event", klog.KObj(e), "reason", e.Reason, "why", why)
}

// sameNamespace reports whether the Event is in the namespace of the object it is about. The UID and
// namespace an Event names are its author's to choose: one written in a namespace about a pod of
// another (whose UID its author learnt) is not shown, and an Event is linked to a pod (its node, its
// controller's replacement) only within the Event's own namespace.
func sameNamespace(e *corev1.Event) bool {
	return e.InvolvedObject.Namespace == e.Namespace
}

func ownedBy(p *corev1.Pod, owner types.UID) bool {
	for _, ref := range p.OwnerReferences {
		if ref.Controller != nil && *ref.Controller && ref.UID == owner {
			return true
		}
	}
	return false
}
