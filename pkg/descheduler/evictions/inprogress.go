package evictions

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Annotations of evictions that end later, by someone else than the Eviction API call.
const (
	// SoftEvictionAnnotation marks a pod a profile in evictionMode Soft nominated: the pod's own
	// controller is expected to move it. Its value is the time it was set (RFC 3339).
	SoftEvictionAnnotation = "descheduler.accord.dev/soft-eviction"
	// SoftEvictionReasonAnnotation says who set SoftEvictionAnnotation and why:
	// "<profile>/<plugin>: <reason>".
	SoftEvictionReasonAnnotation = "descheduler.accord.dev/soft-eviction-reason"
	// RequestEvictOnlyAnnotation is upstream's: the pod's controller answers an eviction request by
	// migrating it (KubeVirt live migration) rather than letting it be deleted.
	RequestEvictOnlyAnnotation = "descheduler.alpha.kubernetes.io/request-evict-only"
	// EvictionInProgressAnnotation is upstream's: set by the pod's controller while it evicts the
	// pod in background.
	EvictionInProgressAnnotation = "descheduler.alpha.kubernetes.io/eviction-in-progress"
	// EvictionInBackgroundErrorText is what a 429 answer to an eviction of a pod annotated
	// request-evict-only contains when its controller took the request (KubeVirt's webhook).
	EvictionInBackgroundErrorText = "Eviction triggered evacuation"
	// AssumedBackgroundTimeout is how long a background eviction the webhook accepted is counted
	// without the controller setting eviction-in-progress (upstream's 10 minutes).
	AssumedBackgroundTimeout = 10 * time.Minute
)

// Kinds of in-progress evictions.
const (
	InProgressSoft       = "soft"
	InProgressBackground = "background"
)

type inProgressEntry struct {
	kind, node, namespace string
	// assumed: recorded from our own request, not yet seen in the pod's annotations.
	assumed bool
	at      time.Time
}

// InProgress tracks the pods whose eviction is in progress outside the Eviction API call: pods
// annotated soft-evicted (SoftEvictionAnnotation), and, with EvictionsInBackground, pods annotated
// request-evict-only whose controller set eviction-in-progress or whose eviction request was answered
// "in progress". The Limiter counts them against every cap and the Budget against their workload
// until they are gone; evictors never evict them again meanwhile. It is fed by the pod informer, so a
// restarted descheduler rebuilds it from the annotations. Safe for concurrent use.
type InProgress struct {
	background bool
	now        func() time.Time

	// ended, when set, is told (outside the lock) of each pod whose eviction ended while the pod
	// stays (its annotation removed): the Budget releases the pod's slot (Limiter.SetBudget sets it).
	ended func(types.UID)

	mu      sync.Mutex
	pods    map[types.UID]inProgressEntry
	perNode map[string]int
	perNS   map[string]int
	synced  cache.InformerSynced
}

// NewInProgress returns an empty tracker; background enables the EvictionsInBackground annotations.
// now is the clock (time.Now when nil).
func NewInProgress(background bool, now func() time.Time) *InProgress {
	if now == nil {
		now = time.Now
	}
	return &InProgress{background: background, now: now, pods: map[types.UID]inProgressEntry{}, perNode: map[string]int{}, perNS: map[string]int{}}
}

// Background reports whether EvictionsInBackground is enabled.
func (t *InProgress) Background() bool { return t != nil && t.background }

// AddToInformer feeds the tracker from the pod informer.
func (t *InProgress) AddToInformer(inf cache.SharedIndexInformer) error {
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { t.observe(nil, podOf(obj)) },
		UpdateFunc: func(old, obj interface{}) { t.observe(podOf(old), podOf(obj)) },
		DeleteFunc: func(obj interface{}) {
			if p := podOf(obj); p != nil {
				t.forget(p.UID, "", "pod deleted", p)
			}
		},
	})
	if err != nil {
		return err
	}
	t.synced = reg.HasSynced
	return nil
}

// HasSynced reports whether the informer's initial list has been delivered.
func (t *InProgress) HasSynced() bool { return t.synced == nil || t.synced() }

func podOf(obj interface{}) *corev1.Pod {
	switch o := obj.(type) {
	case *corev1.Pod:
		return o
	case cache.DeletedFinalStateUnknown:
		p, _ := o.Obj.(*corev1.Pod)
		return p
	}
	return nil
}

func finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// observe applies a pod's annotations: a soft-eviction annotation, or (EvictionsInBackground) both
// request-evict-only and eviction-in-progress, track the pod; a finished pod, a pod that lost
// request-evict-only, or whose eviction-in-progress or soft-eviction annotation was removed, is
// forgotten. A pod we assumed in background stays tracked while its controller has not yet set
// eviction-in-progress (until AssumedBackgroundTimeout).
func (t *InProgress) observe(old, p *corev1.Pod) {
	if p == nil {
		return
	}
	if finished(p) {
		t.forget(p.UID, "", "pod finished", p)
		return
	}
	if hasAnnotation(p, SoftEvictionAnnotation) {
		t.add(p, InProgressSoft, false)
		return
	}
	if old != nil && hasAnnotation(old, SoftEvictionAnnotation) {
		t.end(p, InProgressSoft, "soft-eviction annotation removed")
		return
	}
	if !t.background {
		return
	}
	if !hasAnnotation(p, RequestEvictOnlyAnnotation) {
		t.end(p, InProgressBackground, "request-evict-only annotation removed")
		return
	}
	if hasAnnotation(p, EvictionInProgressAnnotation) {
		t.add(p, InProgressBackground, false)
		return
	}
	if old != nil && hasAnnotation(old, EvictionInProgressAnnotation) {
		// The controller ended (or restarted) its eviction: a new request may be made.
		t.end(p, InProgressBackground, "eviction-in-progress annotation removed")
	}
}

// end forgets the eviction of kind of a pod that stays (its annotation removed) and tells ended:
// the pod no longer migrates, so nothing counts it against its workload any more.
func (t *InProgress) end(p *corev1.Pod, kind, why string) {
	if t.forget(p.UID, kind, why, p) && t.ended != nil {
		t.ended(p.UID)
	}
}

func hasAnnotation(p *corev1.Pod, key string) bool {
	_, ok := p.Annotations[key]
	return ok
}

// Assume tracks a pod whose eviction we just started outside the Eviction API (a soft eviction we
// annotated, or a request answered "in progress"), before the informer shows its annotation.
func (t *InProgress) Assume(p *corev1.Pod, kind string) { t.add(p, kind, true) }

func (t *InProgress) add(p *corev1.Pod, kind string, assumed bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.pods[p.UID]; ok {
		if e.assumed && !assumed {
			e.assumed, e.kind = false, kind
			t.pods[p.UID] = e
		}
		return
	}
	klog.V(3).InfoS("Eviction in progress; tracking the pod until it is gone", "pod", klog.KObj(p), "kind", kind, "assumed", assumed)
	t.pods[p.UID] = inProgressEntry{kind: kind, node: p.Spec.NodeName, namespace: p.Namespace, assumed: assumed, at: t.now()}
	t.perNode[p.Spec.NodeName]++
	t.perNS[p.Namespace]++
}

// forget stops tracking the pod (only an entry of kind, when kind is set); it reports whether it
// was tracked.
func (t *InProgress) forget(uid types.UID, kind, why string, p *corev1.Pod) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.pods[uid]
	if !ok || (kind != "" && e.kind != kind) {
		return false
	}
	klog.V(3).InfoS("Eviction no longer in progress; not tracked", "pod", klog.KObj(p), "kind", e.kind, "why", why)
	t.drop(uid, e)
	return true
}

// drop removes an entry. t.mu held.
func (t *InProgress) drop(uid types.UID, e inProgressEntry) {
	delete(t.pods, uid)
	if t.perNode[e.node]--; t.perNode[e.node] <= 0 {
		delete(t.perNode, e.node)
	}
	if t.perNS[e.namespace]--; t.perNS[e.namespace] <= 0 {
		delete(t.perNS, e.namespace)
	}
}

// expire forgets assumed background evictions older than AssumedBackgroundTimeout. t.mu held.
func (t *InProgress) expire() {
	now := t.now()
	for uid, e := range t.pods {
		if e.assumed && e.kind == InProgressBackground && now.Sub(e.at) > AssumedBackgroundTimeout {
			klog.InfoS("Background eviction not confirmed by eviction-in-progress in time; no longer tracked", "namespace", e.namespace, "podUID", uid, "timeout", AssumedBackgroundTimeout)
			t.drop(uid, e)
		}
	}
}

// Has reports whether the pod's eviction is in progress, and of which kind.
func (t *InProgress) Has(uid types.UID) (string, bool) {
	if t == nil {
		return "", false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expire()
	e, ok := t.pods[uid]
	return e.kind, ok
}

// Counts returns the in-progress evictions in total, on node and in namespace.
func (t *InProgress) Counts(node, namespace string) (total, onNode, inNamespace int) {
	return t.countsExcept(node, namespace, nil)
}

// countsExcept is Counts without the pods in except (those the Limiter counts by their slots).
func (t *InProgress) countsExcept(node, namespace string, except map[types.UID]bool) (total, onNode, inNamespace int) {
	if t == nil {
		return 0, 0, 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expire()
	total, onNode, inNamespace = len(t.pods), t.perNode[node], t.perNS[namespace]
	for uid := range except {
		e, ok := t.pods[uid]
		if !ok {
			continue
		}
		total--
		if e.node == node {
			onNode--
		}
		if e.namespace == namespace {
			inNamespace--
		}
	}
	return total, onNode, inNamespace
}

// ByKind returns how many evictions of each kind are in progress.
func (t *InProgress) ByKind() map[string]int {
	out := map[string]int{InProgressSoft: 0, InProgressBackground: 0}
	if t == nil {
		return out
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expire()
	for _, e := range t.pods {
		out[e.kind]++
	}
	return out
}
