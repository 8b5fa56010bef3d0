// Package pluginutil holds what several in-tree descheduler plugins share: the upstream
// `namespaces` and threshold arg types with their validation, the pod selection every plugin applies
// (namespaces, labelSelector, the profile's evictor filters), the eviction loop that honours the
// per-cycle limits, pod ordering, and the "fits another node" check.
//
// Only the arg types carry deepcopy-gen tags: the rest of the package is code, not API.
package pluginutil
