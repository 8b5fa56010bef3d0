package constraints

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
)

// AppendRequestedResources appends to dst the name of every resource the pod requests, each name
// once, sorts the appended names and returns the extended slice. Names already in dst before the
// call are left alone and are not used for de-duplication.
//
// A resource counts as requested when the request Kubernetes computes for the pod is above zero.
// Kubernetes takes the larger of the sum over the regular (and restartable "sidecar" init)
// containers and the largest single init container, adds the pod overhead, and uses pod-level
// requests (spec.resources) where those are set. All of these quantities are non-negative, so the
// computed request for a resource is positive exactly when the pod-level requests, any container,
// any init container or the overhead asks for a positive amount of it; that is what this function
// checks, without building the quantities. A request of zero is not a request.
//
// Requests are read as stored: the API server copies limits into unset requests when the pod is
// created, so pods from a cluster need no further defaulting.
//
// It allocates only if dst lacks capacity: a caller that keeps a buffer of, say, eight names pays
// nothing.
func AppendRequestedResources(dst []corev1.ResourceName, pod *corev1.Pod) []corev1.ResourceName {
	if pod == nil {
		return dst
	}
	start := len(dst)
	if pod.Spec.Resources != nil {
		dst = appendPositive(dst, start, pod.Spec.Resources.Requests)
	}
	for i := range pod.Spec.InitContainers {
		dst = appendPositive(dst, start, pod.Spec.InitContainers[i].Resources.Requests)
	}
	for i := range pod.Spec.Containers {
		dst = appendPositive(dst, start, pod.Spec.Containers[i].Resources.Requests)
	}
	dst = appendPositive(dst, start, pod.Spec.Overhead)
	slices.Sort(dst[start:])
	return dst
}

func appendPositive(dst []corev1.ResourceName, start int, list corev1.ResourceList) []corev1.ResourceName {
	for name, q := range list {
		if q.Sign() <= 0 || slices.Contains(dst[start:], name) {
			continue
		}
		dst = append(dst, name)
	}
	return dst
}

// Enabled reports whether the ClusterScopedResource offers the named resource: its ResourcesFilter
// has the name set to true. A nil ClusterScopedResource offers nothing.
func Enabled(csr *schedv1alpha1.ClusterScopedResource, name corev1.ResourceName) bool {
	return csr != nil && csr.Spec.ResourcesFilter[name]
}

// MissingResource returns the first name in requested that the ClusterScopedResource does not
// enable, and true; or "" and false when it enables all of them. With requested sorted (as
// AppendRequestedResources leaves it) the answer is the alphabetically first missing resource, so
// messages built from it are stable. A nil ClusterScopedResource enables nothing: the first
// requested name is missing. An empty requested list is never missing anything.
func MissingResource(csr *schedv1alpha1.ClusterScopedResource, requested []corev1.ResourceName) (corev1.ResourceName, bool) {
	for _, name := range requested {
		if !Enabled(csr, name) {
			return name, true
		}
	}
	return "", false
}

// EnablesAll reports whether the ClusterScopedResource enables every requested resource.
func EnablesAll(csr *schedv1alpha1.ClusterScopedResource, requested []corev1.ResourceName) bool {
	_, missing := MissingResource(csr, requested)
	return !missing
}

// ResourceScore returns the ClusterScopedResource's score for one resource, clamped to 0..100: a
// resource absent from ResourcesScore, a negative score and a nil ClusterScopedResource all count
// 0, a score above 100 counts 100.
func ResourceScore(csr *schedv1alpha1.ClusterScopedResource, name corev1.ResourceName) int64 {
	if csr == nil {
		return 0
	}
	return clamp(int64(csr.Spec.ResourcesScore[name]), 0, schedv1alpha1.MaxResourceScore)
}

// NodeScore returns how good the node described by the ClusterScopedResource is for a pod that
// requests the given resources: the mean of ResourceScore over the requested resources, rounded
// up, in 0..100. A pod that requests nothing scores 0 everywhere, so the score does not tell nodes
// apart for it.
func NodeScore(csr *schedv1alpha1.ClusterScopedResource, requested []corev1.ResourceName) int64 {
	n := int64(len(requested))
	if n == 0 || csr == nil {
		return 0
	}
	var sum int64
	for _, name := range requested {
		sum += ResourceScore(csr, name)
	}
	return clamp((sum+n-1)/n, 0, schedv1alpha1.MaxResourceScore)
}

func clamp(v, lo, hi int64) int64 {
	return min(max(v, lo), hi)
}
