// Package informertransform holds the informer transforms (cache.TransformFunc) of Accord's
// informers: StripManagedFields for every factory, PodSharer for the pod informers of both
// binaries (the descheduler's factory and kube-scheduler's own). Their objects are shared: a
// cached object, and with PodSharer the maps, slices and strings pods of one template have in
// common, must never be written; DeepCopy first. Guard checks that in tests.
package informertransform

import (
	"k8s.io/apimachinery/pkg/api/meta"
)

// StripManagedFields is the informer transform (cache.TransformFunc) of Accord's informer factories
// (the descheduler's, and the scheduler plugins' CR cache): it drops metadata.managedFields, the
// server-side-apply bookkeeping that no plugin, the scheduler simulation nor the evictor reads, and
// that takes about a sixth of a cached pod's memory (kube-scheduler's pod informer drops it too).
// Everything else is kept as the apiserver sent it. The object is the informer's own freshly decoded
// one, so it is changed in place; an object without metadata (a tombstone) is returned as it is.
func StripManagedFields(obj any) (any, error) {
	if accessor, err := meta.Accessor(obj); err == nil && accessor.GetManagedFields() != nil {
		accessor.SetManagedFields(nil)
	}
	return obj, nil
}
