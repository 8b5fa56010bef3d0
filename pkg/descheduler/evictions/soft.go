package evictions

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

// Event reasons of evictions that end later.
const (
	// ReasonSoftEvicted: a profile in evictionMode Soft annotated the pod for its controller to move.
	ReasonSoftEvicted = "SoftEvicted"
	// ReasonSoftEvictionCleared: the soft-eviction annotation was removed, the pod no longer being
	// nominated.
	ReasonSoftEvictionCleared = "SoftEvictionCleared"
	// ReasonEvictionInBackground: the eviction request was answered "in progress" (request-evict-only).
	ReasonEvictionInBackground = "EvictionInBackground"
)

// SoftEviction is the value of SoftEvictionAnnotation (JSON).
type SoftEviction struct {
	// Time the annotation was set, RFC 3339.
	Time time.Time `json:"time"`
	// Profile and Plugin nominated the pod; Reason is the plugin's.
	Profile string `json:"profile"`
	Plugin  string `json:"plugin,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// ParseSoftEviction reads a pod's soft-eviction annotation; ok is false when it has none or it
// cannot be read.
func ParseSoftEviction(p *corev1.Pod) (SoftEviction, bool) {
	v, ok := p.Annotations[SoftEvictionAnnotation]
	if !ok {
		return SoftEviction{}, false
	}
	var s SoftEviction
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return SoftEviction{}, false
	}
	return s, true
}

// Soft is a profile's soft eviction (evictionMode Soft): instead of calling the Eviction API the
// evictor annotates the pod with SoftEvictionAnnotation. A soft-evicted pod stays annotated while
// the profile keeps nominating it: at the end of each cycle in which every Deschedule and Balance
// plugin of the profile ran to completion (none skipped by the total cap, none failed, the cycle not
// cancelled), the annotation is removed from each pod the profile annotated before the cycle began
// and that none of its plugins nominated in the cycle (asked to evict it, or asked whether the
// limits let it go). A plugin stopped short by a limit did not reach the pods after the stop: a
// per-node (per-namespace) limit the evictor answered in the cycle keeps the annotations of the
// node's (namespace's) pods, and the total limit or caches not re-synced keep them all (the cycle
// is not a complete sweep). Pods annotated by another profile, or whose annotation cannot be read,
// are left alone.
type Soft struct {
	Profile string
	Client  kubernetes.Interface
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu         sync.Mutex
	nominated  map[types.UID]bool
	cycleStart time.Time
	inCycle    bool
	// The cycle's cuts: nodes and namespaces whose limit stopped a plugin, and whether the total
	// limit or stale caches stopped one.
	cutNodes, cutNamespaces map[string]bool
	cutAll                  bool
}

func (s *Soft) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Nominate records that a plugin of the profile nominated the pod.
func (s *Soft) Nominate(p *corev1.Pod) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.nominated != nil {
		s.nominated[p.UID] = true
	}
}

// Cut records that the evictor answered a plugin with err for pod: a per-node or per-namespace
// limit, the total limit or caches not re-synced stop the plugin before it reaches the pods after
// pod, so the cycle does not say those pods no longer violate. Other errors are ignored.
func (s *Soft) Cut(pod *corev1.Pod, err error) {
	if s == nil || err == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.inCycle {
		return
	}
	switch {
	case framework.IsTotalLimit(err), framework.IsCachesNotSynced(err):
		s.cutAll = true
	case framework.IsNodeLimit(err):
		s.cutNodes[pod.Spec.NodeName] = true
	case framework.IsNamespaceLimit(err):
		s.cutNamespaces[pod.Namespace] = true
	}
}

// BeginCycle starts recording nominations.
func (s *Soft) BeginCycle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nominated, s.cycleStart, s.inCycle = map[types.UID]bool{}, s.now(), true
	s.cutNodes, s.cutNamespaces, s.cutAll = map[string]bool{}, map[string]bool{}, false
}

// Annotate marks the pod soft-evicted.
func (s *Soft) Annotate(ctx context.Context, p *corev1.Pod, plugin, reason string) error {
	v, err := json.Marshal(SoftEviction{Time: s.now().UTC().Truncate(time.Second), Profile: s.Profile, Plugin: plugin, Reason: reason})
	if err != nil {
		return err
	}
	return s.patch(ctx, p, string(v))
}

func (s *Soft) patch(ctx context.Context, p *corev1.Pod, value string) error {
	return patchSoftEviction(ctx, s.Client, p, value)
}

// patchSoftEviction sets (value non-empty) or removes the annotation, with the pod's UID as a
// precondition.
func patchSoftEviction(ctx context.Context, client kubernetes.Interface, p *corev1.Pod, value string) error {
	var val interface{}
	if value != "" {
		val = value
	}
	body, err := json.Marshal(map[string]interface{}{"metadata": map[string]interface{}{
		"uid":         p.UID,
		"annotations": map[string]interface{}{SoftEvictionAnnotation: val},
	}})
	if err != nil {
		return err
	}
	// FieldManager: the pod's managedFields name the descheduler as the annotation's owner, which is
	// how its informer tells its own marks from anyone else's (DropForeignMarks).
	_, err = client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager})
	return err
}

// EndCycle ends the cycle's recording; when complete (and no total limit or stale caches cut it
// short), it removes the annotation from the pods in pods this profile annotated before the cycle
// began and did not nominate in it, except on the nodes and in the namespaces where a limit cut a
// plugin short (see Cut), and returns them.
func (s *Soft) EndCycle(ctx context.Context, pods []*corev1.Pod, complete bool, onCleared func(*corev1.Pod)) []*corev1.Pod {
	s.mu.Lock()
	nominated, start, was := s.nominated, s.cycleStart, s.inCycle
	cutNodes, cutNamespaces, cutAll := s.cutNodes, s.cutNamespaces, s.cutAll
	s.nominated, s.inCycle, s.cutNodes, s.cutNamespaces = nil, false, nil, nil
	s.mu.Unlock()
	if !was || !complete || cutAll {
		return nil
	}
	logger := klog.FromContext(ctx)
	var cleared []*corev1.Pod
	for _, p := range pods {
		se, ok := ParseSoftEviction(p)
		if !ok || se.Profile != s.Profile || nominated[p.UID] || !se.Time.Before(start.Truncate(time.Second)) || p.DeletionTimestamp != nil {
			continue
		}
		if cutNodes[p.Spec.NodeName] || cutNamespaces[p.Namespace] {
			logger.V(3).Info("Soft-evicted pod not reached this cycle (a limit stopped the plugin); annotation kept", "pod", klog.KObj(p), "profile", s.Profile)
			continue
		}
		if err := s.patch(ctx, p, ""); err != nil {
			if !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				logger.Error(err, "Removing the soft-eviction annotation", "pod", klog.KObj(p), "profile", s.Profile)
			}
			continue
		}
		logger.Info("Pod no longer nominated; soft-eviction annotation removed", "pod", klog.KObj(p), "profile", s.Profile, "annotatedAt", se.Time)
		if onCleared != nil {
			onCleared(p)
		}
		cleared = append(cleared, p)
	}
	return cleared
}

// ClearOrphanSoftEvictions removes the soft-eviction annotation from the pods in pods whose
// annotation cannot be read or names a profile that is not in evictionMode Soft in the running
// policy (softProfiles): no plugin will nominate them again, and they would hold their caps for
// ever. It returns the pods cleared.
func ClearOrphanSoftEvictions(ctx context.Context, client kubernetes.Interface, pods []*corev1.Pod, softProfiles map[string]bool, onCleared func(*corev1.Pod)) []*corev1.Pod {
	logger := klog.FromContext(ctx)
	var cleared []*corev1.Pod
	for _, p := range pods {
		if !hasAnnotation(p, SoftEvictionAnnotation) || p.DeletionTimestamp != nil {
			continue
		}
		se, ok := ParseSoftEviction(p)
		if ok && softProfiles[se.Profile] {
			continue
		}
		if err := patchSoftEviction(ctx, client, p, ""); err != nil {
			if !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				logger.Error(err, "Removing an orphaned soft-eviction annotation", "pod", klog.KObj(p))
			}
			continue
		}
		logger.Info("Soft-eviction annotation of no Soft profile of this policy removed", "pod", klog.KObj(p), "profile", se.Profile,
			"value", p.Annotations[SoftEvictionAnnotation])
		if onCleared != nil {
			onCleared(p)
		}
		cleared = append(cleared, p)
	}
	return cleared
}
