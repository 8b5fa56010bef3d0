package component

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
