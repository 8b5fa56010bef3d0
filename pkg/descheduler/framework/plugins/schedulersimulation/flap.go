package schedulersimulation

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// ownerOf returns the UID of the pod's controller ("" for a bare pod).
func ownerOf(pod *corev1.Pod) types.UID {
	if ref := metav1.GetControllerOf(pod); ref != nil {
		return ref.UID
	}
	return ""
}

// eviction is an admitted eviction, remembered for the flap window.
type eviction struct {
	pod       types.UID
	obj       *corev1.Pod
	from      string
	predicted string
	at        time.Time
	// gone: the evicted pod was seen deleted or terminating, so the eviction happened.
	gone bool
}

type ownerNode struct {
	owner types.UID
	node  string
}

type backoff struct {
	level    int
	until    time.Time
	lastFlap time.Time
}

// Landing is what a replacement pod's binding says about an eviction.
type Landing struct {
	// Matched: the pod is the replacement of a remembered eviction.
	Matched bool
	// From, Predicted and Node: where the evicted pod was, where the simulation predicted its
	// replacement, where the replacement landed.
	From, Predicted, Node string
	// Flap: the replacement landed back on From; Backoff is the backoff that started.
	Flap    bool
	Backoff time.Duration
}

// flapMemory remembers admitted evictions per owner and, when a replacement lands back on the
// node its predecessor was evicted from, backs off further evictions of that owner from that node:
// base, 2×base, 4×base… up to max, the level resetting once a whole window passes without a flap.
type flapMemory struct {
	clock             clock.PassiveClock
	window, base, max time.Duration

	mu        sync.Mutex
	evictions map[types.UID][]*eviction
	backoffs  map[ownerNode]*backoff
	// nextExpire is a time no later than the first moment an eviction or a backoff can expire:
	// expire scans only from then on (an admitted eviction calls it, and a cycle may admit
	// thousands).
	nextExpire time.Time
	// landed are evictions whose replacement was bound in the last landedGrace: the simulator's
	// cache and this memory learn of the binding from separate informer handlers, so for a moment
	// the cache may not have the replacement yet; Pending keeps counting it meanwhile.
	landed []*eviction
}

// landedGrace: see flapMemory.landed.
const landedGrace = 2 * time.Second

func newFlapMemory(c clock.PassiveClock, window, base, max time.Duration) *flapMemory {
	return &flapMemory{clock: c, window: window, base: base, max: max,
		evictions: map[types.UID][]*eviction{}, backoffs: map[ownerNode]*backoff{}}
}

// Evicting records an admitted eviction of pod, whose replacement is predicted on predicted.
func (f *flapMemory) Evicting(pod *corev1.Pod, predicted string) {
	owner := ownerOf(pod)
	if owner == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expire()
	now := f.clock.Now()
	f.evictions[owner] = append(f.evictions[owner], &eviction{pod: pod.UID, obj: pod, from: pod.Spec.NodeName, predicted: predicted, at: now})
	f.expiresAt(now.Add(f.window))
}

// PendingMove is an evicted pod whose replacement has not landed yet, and where it is predicted.
type PendingMove struct {
	Pod       *corev1.Pod
	Predicted string
}

// Pending returns the evictions of the last ttl that happened (the pod is gone) and whose
// replacement has not been bound yet, oldest first: a new cycle's snapshot must count them on
// their predicted nodes, or a second eviction could count on the room the first one's replacement
// is about to take.
func (f *flapMemory) Pending(ttl time.Duration) []PendingMove {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.clock.Now()
	var out []PendingMove
	kept := f.landed[:0]
	for _, e := range f.landed {
		if now.Sub(e.at) <= landedGrace {
			kept = append(kept, e)
			out = append(out, PendingMove{Pod: e.obj, Predicted: e.predicted})
		}
	}
	clear(f.landed[len(kept):])
	f.landed = kept
	for _, list := range f.evictions {
		for _, e := range list {
			if e.gone && now.Sub(e.at) <= ttl {
				out = append(out, PendingMove{Pod: e.obj, Predicted: e.predicted})
			}
		}
	}
	return out
}

// Gone records that pod was deleted or is terminating.
func (f *flapMemory) Gone(pod *corev1.Pod) {
	owner := ownerOf(pod)
	if owner == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.evictions[owner] {
		if e.pod == pod.UID {
			e.gone = true
		}
	}
}

// Bound judges a pod just bound to a node: if it replaces an evicted pod of the same owner (the
// oldest one that is gone and that it was created after), that eviction is settled, and a landing
// back on the evicted pod's node starts or extends the backoff of the owner on that node.
func (f *flapMemory) Bound(pod *corev1.Pod) Landing {
	owner := ownerOf(pod)
	if owner == "" || pod.Spec.NodeName == "" {
		return Landing{}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expire()
	list := f.evictions[owner]
	for i, e := range list {
		// Creation timestamps have a resolution of one second.
		if !e.gone || e.pod == pod.UID || pod.CreationTimestamp.Time.Before(e.at.Truncate(time.Second)) {
			continue
		}
		f.evictions[owner] = append(list[:i:i], list[i+1:]...)
		landed := *e
		landed.at = f.clock.Now()
		f.landed = append(f.landed, &landed)
		l := Landing{Matched: true, From: e.from, Predicted: e.predicted, Node: pod.Spec.NodeName}
		if l.Node == e.from {
			l.Flap = true
			l.Backoff = f.flap(ownerNode{owner, e.from})
		}
		return l
	}
	return Landing{}
}

func (f *flapMemory) flap(key ownerNode) time.Duration {
	now := f.clock.Now()
	b := f.backoffs[key]
	if b == nil || now.Sub(b.lastFlap) > f.window {
		b = &backoff{}
		f.backoffs[key] = b
	}
	b.level++
	d := f.base
	for i := 1; i < b.level && d < f.max; i++ {
		d *= 2
	}
	d = min(d, f.max)
	b.lastFlap = now
	b.until = now.Add(d)
	f.expiresAt(backoffExpiry(b, f.window))
	return d
}

// backoffExpiry is the first moment expire may forget b: over and its last flap a window old.
func backoffExpiry(b *backoff, window time.Duration) time.Time {
	if t := b.lastFlap.Add(window); t.After(b.until) {
		return t
	}
	return b.until
}

// expiresAt notes that something may expire from t on.
func (f *flapMemory) expiresAt(t time.Time) {
	if f.nextExpire.IsZero() || t.Before(f.nextExpire) {
		f.nextExpire = t
	}
}

// BlockedUntil reports whether evictions of pod's owner from the node pod is on are backing off,
// and until when.
func (f *flapMemory) BlockedUntil(pod *corev1.Pod) (time.Time, bool) {
	owner := ownerOf(pod)
	if owner == "" {
		return time.Time{}, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.backoffs[ownerNode{owner, pod.Spec.NodeName}]
	if b == nil || !f.clock.Now().Before(b.until) {
		return time.Time{}, false
	}
	return b.until, true
}

// Active counts the owner/node pairs backing off now.
func (f *flapMemory) Active() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.clock.Now()
	n := 0
	for _, b := range f.backoffs {
		if now.Before(b.until) {
			n++
		}
	}
	return n
}

// expire forgets evictions older than the window and backoffs that are over and whose last flap
// is older than the window.
func (f *flapMemory) expire() {
	now := f.clock.Now()
	if f.nextExpire.IsZero() || now.Before(f.nextExpire) {
		return
	}
	f.nextExpire = time.Time{}
	for owner, list := range f.evictions {
		kept := list[:0]
		for _, e := range list {
			if now.Sub(e.at) <= f.window {
				kept = append(kept, e)
			}
		}
		if len(kept) == 0 {
			delete(f.evictions, owner)
			continue
		}
		clear(list[len(kept):])
		f.evictions[owner] = kept
		for _, e := range kept {
			f.expiresAt(e.at.Add(f.window))
		}
	}
	for key, b := range f.backoffs {
		if !now.Before(b.until) && now.Sub(b.lastFlap) > f.window {
			delete(f.backoffs, key)
			continue
		}
		f.expiresAt(backoffExpiry(b, f.window))
	}
}
