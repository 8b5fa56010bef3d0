package crcache

import (
	"sync"

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
}

type entry[T any] struct {
	obj     *T
	derived any
}

func newStore[T any](derive func(*T) any) Store[T] {
	return Store[T]{m: &objects[T]{derive: derive, byKey: map[string]entry[T]{}}}
}

// NewStore returns a store holding objs.
func NewStore[T any, PT interface {
	*T
	metav1.Object
}](objs ...PT) Store[T] {
	s := newStore[T](nil)
	for _, o := range objs {
		if o != nil {
			s.Put(o)
		}
	}
	return s
}

// Get returns the object named name, or nil when there is none.
func (s Store[T]) Get(name string) *T {
	s.m.mu.RLock()
	e := s.m.byKey[name]
	s.m.mu.RUnlock()
	return e.obj
}

// GetDerived returns the object named name and the value the store derived from it when it was
// stored (nil for a store that derives nothing, or when there is no such object).
func (s Store[T]) GetDerived(name string) (*T, any) {
	s.m.mu.RLock()
	e := s.m.byKey[name]
	s.m.mu.RUnlock()
	return e.obj, e.derived
}

// Put adds or replaces obj, which must be a *T.
func (s Store[T]) Put(obj metav1.Object) {
	if t, ok := obj.(any).(*T); ok {
		e := entry[T]{obj: t}
		if s.m.derive != nil {
			e.derived = s.m.derive(t)
		}
		s.m.mu.Lock()
		s.m.byKey[obj.GetName()] = e
		s.m.mu.Unlock()
	}
}

// Remove deletes the object named name.
func (s Store[T]) Remove(name string) {
	s.m.mu.Lock()
	delete(s.m.byKey, name)
	s.m.mu.Unlock()
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
