package informertransform

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// Guard is a test aid that turns the shared-object rule into a check: its Transform runs next and
// keeps a deep copy of every object it hands the informer; Written names each object that no
// longer equals its copy, i.e. that someone wrote to after it was cached (the informer itself never
// does). The fake cluster of the descheduler's plugin tests (pkg/descheduler/framework/fake)
// installs one on its informer factory and fails the test when Written is not empty.
type Guard struct {
	next cache.TransformFunc

	mu     sync.Mutex
	copies map[any]runtime.Object
}

// NewGuard returns a Guard over next (nil: the object as it is).
func NewGuard(next cache.TransformFunc) *Guard {
	return &Guard{next: next, copies: map[any]runtime.Object{}}
}

// Transform is the cache.TransformFunc.
func (g *Guard) Transform(obj any) (any, error) {
	if g.next != nil {
		var err error
		if obj, err = g.next(obj); err != nil {
			return nil, err
		}
	}
	if o, ok := obj.(runtime.Object); ok {
		g.mu.Lock()
		g.copies[obj] = o.DeepCopyObject()
		g.mu.Unlock()
	}
	return obj, nil
}

// Written returns kind namespace/name of every object handed out that differs from the copy taken
// when it was (Quantities compare by value, so reading one, which caches its string, is no write).
func (g *Guard) Written() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for obj, c := range g.copies {
		if !equality.Semantic.DeepEqual(obj, c) {
			name := fmt.Sprintf("%T", obj)
			if a, err := meta.Accessor(obj); err == nil {
				name += " " + a.GetNamespace() + "/" + a.GetName()
			}
			out = append(out, name)
		}
	}
	return out
}
