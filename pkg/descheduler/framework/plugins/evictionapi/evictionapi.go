// Package evictionapi is the default evict plugin: it evicts through the policy/v1 Eviction API, so
// the apiserver enforces PodDisruptionBudgets. A refused eviction (429 TooManyRequests, e.g. a PDB
// allowing no disruption) is returned as an error and the pod stays; it never falls back to a delete.
// A pod already gone (404 NotFound, e.g. evicted by a concurrent eviction) is returned as an error
// wrapping framework.ErrPodGone.
//
// An eviction is for one pod, not for a name: the plugin reads the pod back from the apiserver (a
// quorum read) and does not evict when the pod there is another one (recreated with the same name) or
// is already terminating (the apiserver would answer 200 to the eviction of a terminating pod and it
// would be counted as one more eviction); and the Eviction carries DeleteOptions.Preconditions.UID,
// so a pod replaced between that read and the eviction makes the apiserver answer 409 Conflict, which
// is also returned as framework.ErrPodGone. No ResourceVersion precondition is set: a status update
// (readiness, the kubelet's heartbeat of conditions) would make it fail without a reason.
package evictionapi

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/accord-sched/accord/apis/descheduler/v1alpha2"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

// Name is the plugin's name, the default of `plugins.evict`.
const Name = v1alpha2.DefaultEvictName

// EvictionAPI evicts pods with policy/v1 Evictions.
type EvictionAPI struct {
	handle framework.Handle
}

var _ framework.EvictPlugin = &EvictionAPI{}

// New builds the plugin; it takes no args.
func New(ctx context.Context, _ runtime.Object, h framework.Handle) (framework.Plugin, error) {
	return &EvictionAPI{handle: h}, nil
}

// Name returns the plugin's name.
func (e *EvictionAPI) Name() string { return Name }

// Evict posts an Eviction for the pod. The error of a refused eviction is the apiserver's (test it
// with apierrors.IsTooManyRequests), wrapped with the pod's name. When the pod is already gone the
// error also wraps framework.ErrPodGone (framework.IsPodGone and apierrors.IsNotFound both hold).
func (e *EvictionAPI) Evict(ctx context.Context, pod *corev1.Pod, opts framework.EvictOptions) error {
	client := e.handle.ClientSet()
	current, err := client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("evicting pod %s/%s: %w: %w", pod.Namespace, pod.Name, framework.ErrPodGone, err)
		}
		return fmt.Errorf("evicting pod %s/%s: reading it back: %w", pod.Namespace, pod.Name, err)
	}
	if pod.UID != "" && current.UID != pod.UID {
		return fmt.Errorf("evicting pod %s/%s: %w: recreated (uid %s, was %s)", pod.Namespace, pod.Name, framework.ErrPodGone, current.UID, pod.UID)
	}
	if current.DeletionTimestamp != nil {
		return fmt.Errorf("evicting pod %s/%s: %w: already terminating since %s", pod.Namespace, pod.Name, framework.ErrPodGone, current.DeletionTimestamp.UTC().Format(time.RFC3339))
	}
	ev := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: WithUIDPrecondition(opts.DeleteOptions, current.UID),
	}
	// The eviction subresource lives under the core group's pods: /api/v1/namespaces/NS/pods/NAME/eviction.
	if rc, ok := client.CoreV1().RESTClient().(*rest.RESTClient); ok && rc != nil {
		// client-go retries a 429 that carries Retry-After up to ten times, and the apiserver sets
		// Retry-After on a PDB refusal: a blocked pod would hold the cycle for minutes. Without
		// retries the refusal comes back at once; the next cycle tries again.
		err = rc.Post().Namespace(pod.Namespace).Resource("pods").Name(pod.Name).SubResource("eviction").
			MaxRetries(0).Body(ev).Do(ctx).Error()
	} else {
		// Clientsets without a REST client (fakes).
		err = client.PolicyV1().Evictions(pod.Namespace).Evict(ctx, ev)
	}
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// Conflict: the UID precondition failed, the pod was replaced since it was read.
		return fmt.Errorf("evicting pod %s/%s: %w: %w", pod.Namespace, pod.Name, framework.ErrPodGone, err)
	}
	if err != nil {
		return fmt.Errorf("evicting pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// WithUIDPrecondition returns a copy of opts (nil is empty options) whose Preconditions.UID is uid,
// keeping every other field, a ResourceVersion precondition the caller set included.
func WithUIDPrecondition(opts *metav1.DeleteOptions, uid types.UID) *metav1.DeleteOptions {
	d := &metav1.DeleteOptions{}
	if opts != nil {
		d = opts.DeepCopy()
	}
	if uid == "" {
		return d
	}
	if d.Preconditions == nil {
		d.Preconditions = &metav1.Preconditions{}
	}
	d.Preconditions.UID = &uid
	return d
}
