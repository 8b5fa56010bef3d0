package crcache

import (
	"maps"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// Store holds the cluster-scoped objects of one type by name. Filter and Score read it once per
// node, from many goroutines at a time, so a read only takes a read lock and never allocates; unlike a generated
// lister, an absent object is reported as nil rather than as a NotFound error. A Cache keeps it up to
// date from its informer; tests fill it with Put.
type Store[T any] struct {
	m *objects[T]
}

type objects[T any] struct {
	// derive, when set, computes a value kept with each object (see GetDerived).
	derive func(*T) any
	mu     sync.RWMutex
	byKey  map[string]entry[T]
	// watchers are called, under mu, on every change (see Watch).
	watchers []func(name string, obj *T, derived any)
	// readMostly stores keep snap, an immutable copy of byKey that readers use without taking mu.
	// A change drops it (under mu); the first read after a change takes a new copy. It suits objects
	// that change rarely and are read once per (pod, node), such as ClusterScopedResources: a read
	// then costs an atomic load and a map lookup, and parallel readers do not contend on mu.
	readMostly bool
	snap       atomic.Pointer[map[string]entry[T]]
	copying    atomic.Bool
}

type entry[T any] struct {
	obj     *T
	derived any
}

func newStore[T any](derive func(*T) any, readMostly bool) Store[T] {
	return Store[T]{m: &objects[T]{derive: derive, byKey: map[string]entry[T]{}, readMostly: readMostly}}
}

func (s Store[T]) entry(name string) entry[T] {
	if snap := s.m.snap.Load(); snap != nil {
		return (*snap)[name]
	}
	s.m.mu.RLock()
	e := s.m.byKey[name]
	s.m.mu.RUnlock()
	if s.m.readMostly {
		s.m.takeSnapshot()
	}
	return e
}

// takeSnapshot publishes a copy of byKey for readMostly readers. It copies under the read lock, so
// readers never wait for it; a writer waits, then drops the copy. One reader copies at a time.
func (o *objects[T]) takeSnapshot() {
	if !o.copying.CompareAndSwap(false, true) {
		return
	}
	defer o.copying.Store(false)
	o.mu.RLock()
	defer o.mu.RUnlock()
	if o.snap.Load() == nil {
		c := maps.Clone(o.byKey)
		o.snap.Store(&c)
	}
}

// Get returns the object named name, or nil when there is none.
func (s Store[T]) Get(name string) *T {
	return s.entry(name).obj
}

// GetDerived returns the object named name and the value the store derived from it when it was
// stored (nil for a store that derives nothing, or when there is no such object).
func (s Store[T]) GetDerived(name string) (*T, any) {
	e := s.entry(name)
	return e.obj, e.derived
}

// Put adds or replaces obj, which must be a *T.
func (s Store[T]) Put(obj metav1.Object) {
	t, ok := obj.(any).(*T)
	if !ok {
		return
	}
	e := entry[T]{obj: t}
	if s.m.derive != nil {
		e.derived = s.m.derive(t)
	}
	name := obj.GetName()
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	s.m.byKey[name] = e
	s.m.snap.Store(nil)
	for _, w := range s.m.watchers {
		w(name, e.obj, e.derived)
	}
}

// Remove deletes the object named name.
func (s Store[T]) Remove(name string) {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	if _, ok := s.m.byKey[name]; !ok {
		return
	}
	delete(s.m.byKey, name)
	s.m.snap.Store(nil)
	for _, w := range s.m.watchers {
		w(name, nil, nil)
	}
}

// Watch calls fn once for every object in the store, then for every change: Put calls it with
// the new object and its derived value, Remove with nil for both. Calls are made one at a time, in
// the order of the changes, with the store's lock held, so a reader never sees a change before fn
// has seen it: fn must be quick and must not use the store. The NodeIndex uses it to keep each
// node's data in step with the store.
func (s Store[T]) Watch(fn func(name string, obj *T, derived any)) {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	for name, e := range s.m.byKey {
		fn(name, e.obj, e.derived)
	}
	s.m.watchers = append(s.m.watchers, fn)
}

// handler keeps the store in step with an informer.
func (s Store[T]) handler() cache.ResourceEventHandler {
	put := func(obj any) {
		if o, ok := obj.(metav1.Object); ok {
			s.Put(o)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    put,
		UpdateFunc: func(_, obj any) { put(obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if o, ok := obj.(metav1.Object); ok {
				s.Remove(o.GetName())
			}
		},
	}
}
