package reservation

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/scheduler/crcache"
)

// Ledger is what this scheduler knows of reservations before the API (and so the informer) does:
// the placements the Placer made and is publishing, and the reservations pods consumed in their
// Reserve and are binding into. One Ledger serves all the frameworks of one scheduler (the profiles'
// and the Placer's); the plugin reads it together with the informer, the informer's view winning
// once it has caught up.
//
// It also serialises placement with the scheduling cycle. kube-scheduler assumes a pod in its cache
// before that pod's Reserve, and snapshots its cache at the start of a cycle, before PreFilter. The
// Placer holds place from the snapshot it places on until its placement is in the ledger; a pod's
// Reserve takes place too. So either the pod's Reserve ran first (the pod was assumed before the
// Placer's snapshot: the placement counted it), or the Placer's placement came first: then the
// ledger's generation moved since the pod's PreFilter, and Reserve checks the pod's node again with
// the room now held, rejecting the pod (Unreserve, retry) when it no longer fits.
type Ledger struct {
	// place is held by the Placer from its snapshot until its placement is recorded, and by a
	// pod's Reserve.
	place sync.Mutex

	followOnce sync.Once
	followErr  error

	mu sync.Mutex
	// gen counts placements.
	gen uint64
	// placed: reservations placed by the Placer whose Available status the informer does not show
	// yet, by UID (the object with the status being written).
	placed map[types.UID]*schedv1alpha1.Reservation
	// consumed: the pod that consumed each reservation in its Reserve, by the reservation's UID,
	// until the reservation leaves Available.
	consumed map[types.UID]consumer
	// rooms: what each reservation holds, by UID, for the template generation it was computed for.
	rooms map[types.UID]cachedRoom
	// version counts the changes of what the ledger and the informer say (every informer event,
	// every change above); held is the room held per node computed at held.version.
	version uint64
	held    *heldCache
}

// heldCache is the room held per node by all reservations, as computed at version; it is good
// until the first of them expires.
type heldCache struct {
	version    uint64
	validUntil time.Time
	byNode     map[string]*room
}

// consumer is a pod that consumed a reservation.
type consumer struct {
	name string
	uid  types.UID
}

type cachedRoom struct {
	generation int64
	room       *room
}

// LedgerKey is the crcache.Cache.Shared key of the Ledger.
const LedgerKey = "reservation.ledger"

// LedgerOf returns the Ledger of the scheduler whose plugins read c.
func LedgerOf(c *crcache.Cache) *Ledger {
	return c.Shared(LedgerKey, func() any { return NewLedger() }).(*Ledger)
}

// NewLedger returns an empty Ledger.
func NewLedger() *Ledger {
	return &Ledger{placed: map[types.UID]*schedv1alpha1.Reservation{}, consumed: map[types.UID]consumer{},
		rooms: map[types.UID]cachedRoom{}}
}

// Follow makes l forget what the Reservation informer inf now shows: a placement once the
// reservation is no longer Pending there, a consumption once it is no longer Available, anything of
// a deleted reservation. Only the first call registers (the plugins of all profiles and the Placer
// share one informer).
func (l *Ledger) Follow(inf cache.SharedIndexInformer) error {
	l.followOnce.Do(func() { l.followErr = l.follow(inf) })
	return l.followErr
}

func (l *Ledger) follow(inf cache.SharedIndexInformer) error {
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { l.observe(obj, false) },
		UpdateFunc: func(_, obj any) { l.observe(obj, false) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			l.observe(obj, true)
		},
	})
	return err
}

func (l *Ledger) observe(obj any, deleted bool) {
	r, ok := obj.(*schedv1alpha1.Reservation)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.version++
	if deleted || !pending(r) {
		delete(l.placed, r.UID)
	}
	if deleted || r.Status.Phase != schedv1alpha1.ReservationAvailable {
		delete(l.consumed, r.UID)
	}
	if deleted || (r.Status.Phase != "" && r.Status.Phase != schedv1alpha1.ReservationPending && r.Status.Phase != schedv1alpha1.ReservationAvailable) {
		delete(l.rooms, r.UID)
	}
}

func pending(r *schedv1alpha1.Reservation) bool {
	return r.Status.Phase == "" || r.Status.Phase == schedv1alpha1.ReservationPending
}

// cachedHeld returns the room held per node computed at the current version, if still good at
// now, and the current version.
func (l *Ledger) cachedHeld(now time.Time) (map[string]*room, uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h := l.held; h != nil && h.version == l.version && now.Before(h.validUntil) {
		return h.byNode, l.version
	}
	return nil, l.version
}

// cacheHeld keeps byNode, computed at version and good until validUntil.
func (l *Ledger) cacheHeld(version uint64, validUntil time.Time, byNode map[string]*room) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == nil || l.held.version <= version {
		l.held = &heldCache{version: version, validUntil: validUntil, byNode: byNode}
	}
}

// generation is the number of placements so far.
func (l *Ledger) generation() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gen
}

// assume records r (with its Available status) as placed: from now on every pod's PreFilter counts
// its room.
func (l *Ledger) assume(r *schedv1alpha1.Reservation) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.placed[r.UID] = r
	l.gen++
	l.version++
}

// forget drops the placement of r, whose status could not be written.
func (l *Ledger) forget(r *schedv1alpha1.Reservation) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.placed, r.UID)
	l.version++
}

// effective is r as this scheduler knows it: the placement in the ledger while the informer still
// shows r Pending.
func (l *Ledger) effective(r *schedv1alpha1.Reservation) *schedv1alpha1.Reservation {
	if !pending(r) {
		return r
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if placed, ok := l.placed[r.UID]; ok {
		return placed
	}
	return r
}

// placements returns the ledger's placements not yet shown by the informer.
func (l *Ledger) placements() []*schedv1alpha1.Reservation {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*schedv1alpha1.Reservation, 0, len(l.placed))
	for _, r := range l.placed {
		out = append(out, r)
	}
	return out
}

// consumedBy is the pod that consumed r in its Reserve, if any.
func (l *Ledger) consumedBy(r types.UID) (consumer, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.consumed[r]
	return c, ok
}

// consume records that pod consumes r; false when another pod already does.
func (l *Ledger) consume(r types.UID, pod *corev1.Pod) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c, ok := l.consumed[r]; ok && c.uid != pod.UID {
		return false
	}
	l.consumed[r] = consumer{name: pod.Name, uid: pod.UID}
	l.version++
	return true
}

// consumes reports whether pod consumed some reservation in its Reserve.
func (l *Ledger) consumes(pod types.UID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.consumed {
		if c.uid == pod {
			return true
		}
	}
	return false
}

// release undoes consume (the pod's Unreserve).
func (l *Ledger) release(r types.UID, pod *corev1.Pod) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c, ok := l.consumed[r]; ok && c.uid == pod.UID {
		delete(l.consumed, r)
		l.version++
	}
}

// roomOf is what r holds on its node (its Requests, plus one pod), computed once per template
// generation.
func (l *Ledger) roomOf(r *schedv1alpha1.Reservation) *room {
	l.mu.Lock()
	c, ok := l.rooms[r.UID]
	l.mu.Unlock()
	if ok && c.generation == r.Generation {
		return c.room
	}
	rm := &room{}
	rm.add(Requests(r), 1)
	l.mu.Lock()
	l.rooms[r.UID] = cachedRoom{generation: r.Generation, room: rm}
	l.mu.Unlock()
	return rm
}
