package metrics

import (
	"fmt"
	"sync"

	"k8s.io/component-base/metrics"
)

// SharedRegistry is the descheduler's registry: a KubeRegistry that also keeps, by key, the
// collectors that every instance of a plugin (one per profile) shares, so that a plugin needs no
// package-level record of what it registered where (RegisterShared).
type SharedRegistry struct {
	metrics.KubeRegistry

	mu     sync.Mutex
	shared map[string]any
}

// NewSharedRegistry returns a SharedRegistry over reg.
func NewSharedRegistry(reg metrics.KubeRegistry) *SharedRegistry {
	return &SharedRegistry{KubeRegistry: reg, shared: map[string]any{}}
}

// RegisterShared returns what was registered with reg under key, calling register the first time
// (under reg's lock: two profiles' instances do not register twice). reg must be a
// *SharedRegistry (the runtime's, metrics.New's): with any other registry, register is called and
// its result returned unshared, and a second call with the same registry returns register's
// duplicate-registration error.
func RegisterShared[T any](reg metrics.KubeRegistry, key string, register func(metrics.KubeRegistry) (T, error)) (T, error) {
	s, ok := reg.(*SharedRegistry)
	if !ok {
		return register(reg)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.shared[key]; ok {
		t, ok := v.(T)
		if !ok {
			var zero T
			return zero, fmt.Errorf("metrics shared under %q are a %T, not a %T", key, v, zero)
		}
		return t, nil
	}
	t, err := register(s.KubeRegistry)
	if err != nil {
		return t, err
	}
	s.shared[key] = t
	return t, nil
}
