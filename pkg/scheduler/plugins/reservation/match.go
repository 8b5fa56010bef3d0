package reservation

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	resourcehelper "k8s.io/component-helpers/resource"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/scheduler/crcache"
)

// DefaultSchedulerName is the profile a template without spec.schedulerName is placed with.
const DefaultSchedulerName = corev1.DefaultSchedulerName

// How a pod may consume a reservation (Rank).
const (
	// NoMatch: the pod may not consume it.
	NoMatch = -1
	// RankOwn: the reservation was made for this pod's name (the pod it moves, or a StatefulSet's
	// replacement, which keeps its predecessor's name): it is the pod's own.
	RankOwn = 0
	// RankSibling: the reservation names the pod's controller and the policy lets the pod take it
	// (a pod of a controller without stable identities, such as a ReplicaSet).
	RankSibling = 1
)

// identityKinds are the controllers whose pods have a stable identity (name, volumes, ordinal): a
// pod of theirs consumes only a reservation made for its own name, never a sibling's.
var identityKinds = map[string]bool{"StatefulSet": true}

// Rank says whether pod may consume r and how closely r is the pod's: RankOwn, RankSibling or
// NoMatch. The pod must be in r's namespace and created after r (its replacement, not the pod r
// was made for: a pod owner's uid never matches). A pod owner with the pod's name makes r the
// pod's own. A controller owner with the UID of the pod's controller makes r a sibling's, which
// the pod may take unless r was made for another pod of a controller with stable identities
// (StatefulSet): then it is that pod's, and only that pod's.
//
// Creation times have whole seconds, so "created after r" is read by whether the pod is placed
// (see createdAfter): a pod being scheduled (no spec.nodeName, the Plugin's PreFilter) may have
// been created in r's second; a pod already placed on a node (the Placer's consumer, which has no
// ledger record of a scheduling cycle: a restart, another scheduler) must be created in a later
// second, since one created in r's second may have run on r's node before r was placed there, its
// room already counted when r's was set aside: taking it as r's consumer would free r's room
// while the pod r was made for waits for it.
func Rank(r *schedv1alpha1.Reservation, pod *corev1.Pod) int {
	if pod.Namespace != r.Namespace || !createdAfter(pod, r) {
		return NoMatch
	}
	ref := metav1.GetControllerOf(pod)
	madeForOther, controller := false, false
	for _, o := range r.Spec.Owners {
		if o.Pod != nil {
			if o.Pod.UID != "" && o.Pod.UID == pod.UID {
				return NoMatch
			}
			if o.Pod.Name == pod.Name {
				return RankOwn
			}
			madeForOther = true
		}
		if o.Controller != nil && ref != nil && ref.UID == o.Controller.UID {
			controller = true
		}
	}
	if !controller || (madeForOther && identityKinds[ref.Kind]) {
		return NoMatch
	}
	return RankSibling
}

// createdAfter reports whether pod was created after r, in whole seconds (the API's resolution):
// in r's second or later for a pod not yet placed, in a later second for a placed pod (Rank).
func createdAfter(pod *corev1.Pod, r *schedv1alpha1.Reservation) bool {
	p, c := pod.CreationTimestamp.Unix(), r.CreationTimestamp.Unix()
	if pod.Spec.NodeName == "" {
		return p >= c
	}
	return p > c
}

// Matches reports whether pod may consume r (Rank is not NoMatch).
func Matches(r *schedv1alpha1.Reservation, pod *corev1.Pod) bool { return Rank(r, pod) != NoMatch }

// better reports whether a (of rank ra) is to be consumed before b (of rank rb): the pod's own
// first, then the oldest, then by name.
func better(a *schedv1alpha1.Reservation, ra int, b *schedv1alpha1.Reservation, rb int) bool {
	if ra != rb {
		return ra < rb
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// TTL is r's time to live (spec.ttl or DefaultReservationTTL).
func TTL(r *schedv1alpha1.Reservation) time.Duration {
	if r.Spec.TTL != nil {
		return r.Spec.TTL.Duration
	}
	return schedv1alpha1.DefaultReservationTTL
}

// ExpireTime is when r expires: status.expireTime once set, else its creation time plus its TTL.
func ExpireTime(r *schedv1alpha1.Reservation) time.Time {
	if r.Status.ExpireTime != nil {
		return r.Status.ExpireTime.Time
	}
	return r.CreationTimestamp.Add(TTL(r))
}

// Holding reports whether r holds room on a node at now: Available, placed and not expired.
func Holding(r *schedv1alpha1.Reservation, now time.Time) bool {
	return r.Status.Phase == schedv1alpha1.ReservationAvailable && r.Status.NodeName != "" && now.Before(ExpireTime(r))
}

// PodOf is the pod a reservation stands for: its template, in its namespace, named after it. The
// scheduler places it as it would place this pod.
func PodOf(r *schedv1alpha1.Reservation) *corev1.Pod {
	t := r.Spec.Template.DeepCopy()
	pod := &corev1.Pod{ObjectMeta: t.ObjectMeta, Spec: t.Spec}
	pod.Namespace = r.Namespace
	pod.Name = "reservation-" + r.Name
	pod.UID = "reservation-" + r.UID
	pod.OwnerReferences = nil
	pod.Spec.NodeName = ""
	if pod.Spec.SchedulerName == "" {
		pod.Spec.SchedulerName = DefaultSchedulerName
	}
	return pod
}

// Requests is what r holds on its node: the requests of its pod (resourcehelper.PodRequests, as the
// scheduler counts a pod's), plus one pod.
func Requests(r *schedv1alpha1.Reservation) corev1.ResourceList {
	return resourcehelper.PodRequests(PodOf(r), resourcehelper.PodResourcesOptions{})
}

// ownerKeys are the IndexReservationOwner keys under which pod's reservations are: its name and
// its controller's UID.
func ownerKeys(pod *corev1.Pod) []string {
	keys := []string{crcache.OwnerPodKey(pod.Namespace, pod.Name)}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		keys = append(keys, crcache.OwnerControllerKey(pod.Namespace, string(ref.UID)))
	}
	return keys
}

// byIndex lists the reservations of indexer under index value key.
func byIndex(indexer cache.Indexer, index, key string) ([]*schedv1alpha1.Reservation, error) {
	objs, err := indexer.ByIndex(index, key)
	if err != nil {
		return nil, fmt.Errorf("reading the reservations of %s %q: %w", index, key, err)
	}
	out := make([]*schedv1alpha1.Reservation, 0, len(objs))
	for _, o := range objs {
		if r, ok := o.(*schedv1alpha1.Reservation); ok {
			out = append(out, r)
		}
	}
	return out, nil
}
