package console

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	schedlisters "github.com/accord-sched/accord/pkg/generated/listers/scheduling/v1alpha1"
	slolisters "github.com/accord-sched/accord/pkg/generated/listers/slo/v1alpha1"
)

// Indexes of the Event informer.
const (
	eventByObjectUID = "involvedObject.uid"
	eventByReason    = "reason"
)

// maxGone bounds how many deleted pods' owners are remembered (to find evicted pods' replacements).
const maxGone = 2000

// state is the console's read side: listers over the shared informers, and what it remembers of
// deleted pods.
type state struct {
	nodes   corelisters.NodeLister
	pods    corelisters.PodLister
	events  cache.Indexer
	csrs    schedlisters.ClusterScopedResourceLister
	metrics slolisters.NodeMetricLister
	// migrations is nil when the cluster does not serve the PodMigration CRD.
	migrations schedlisters.PodMigrationLister
	thresholds Thresholds
	playground bool

	mu sync.Mutex
	// known holds every pod seen: live ones, and the last maxGone deleted ones (in gone's order).
	known map[types.UID]podRecord
	gone  []types.UID
}

// podRecord is what is remembered of a pod once it is gone.
type podRecord struct {
	Namespace, Name, Node string
	// Owner is the UID of the pod's controller ("" for none).
	Owner types.UID
}

func newState() *state { return &state{known: map[types.UID]podRecord{}} }

func (s *state) podSeen(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	rec := podRecord{Namespace: p.Namespace, Name: p.Name, Node: p.Spec.NodeName}
	for _, ref := range p.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			rec.Owner = ref.UID
		}
	}
	s.mu.Lock()
	s.known[p.UID] = rec
	s.mu.Unlock()
}

func (s *state) podGone(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	s.podSeen(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gone = append(s.gone, p.UID)
	if len(s.gone) > maxGone {
		delete(s.known, s.gone[0])
		s.gone = s.gone[1:]
	}
}

func (s *state) record(uid types.UID) (podRecord, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.known[uid]
	return r, ok
}

// EventTime is when an Event happened: events.k8s.io Events carry EventTime, core ones timestamps.
func EventTime(e *corev1.Event) time.Time { return eventTime(e) }

func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

// schedulingFailure is the message of the pod's latest FailedScheduling Event, or else of its
// PodScheduled=False condition.
func (s *state) schedulingFailure(p *corev1.Pod) string {
	objs, _ := s.events.ByIndex(eventByObjectUID, string(p.UID))
	var latest *corev1.Event
	for _, o := range objs {
		e := o.(*corev1.Event)
		if e.Reason == "FailedScheduling" && (latest == nil || eventTime(e).After(eventTime(latest))) {
			latest = e
		}
	}
	if latest != nil {
		return latest.Message
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return c.Message
		}
	}
	return ""
}

func eventIndexers() cache.Indexers {
	return cache.Indexers{
		eventByObjectUID: func(obj any) ([]string, error) {
			if e, ok := obj.(*corev1.Event); ok {
				return []string{string(e.InvolvedObject.UID)}, nil
			}
			return nil, nil
		},
		eventByReason: func(obj any) ([]string, error) {
			if e, ok := obj.(*corev1.Event); ok {
				return []string{e.Reason}, nil
			}
			return nil, nil
		},
	}
}
