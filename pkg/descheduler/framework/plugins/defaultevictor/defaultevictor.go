package defaultevictor

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	schedulingapi "k8s.io/kubernetes/pkg/apis/scheduling"

	"github.com/accord-sched/accord/apis/descheduler/v1alpha2"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/nodefit"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// Name is the plugin's name.
const Name = v1alpha2.DefaultEvictorName

const (
	// PreferNoEvictionAnnotation marks a pod its owner would rather not see evicted.
	PreferNoEvictionAnnotation = "descheduler.alpha.kubernetes.io/prefer-no-eviction"
	// EvictAnnotation marks a pod as evictable despite the protections (not despite the mirror,
	// static, terminating, labelSelector and minPodAge rules).
	EvictAnnotation = "descheduler.alpha.kubernetes.io/evict"

	mirrorAnnotation       = corev1.MirrorPodAnnotationKey
	configSourceAnnotation = "kubernetes.io/config.source"
	ownerUIDIndex          = "accord.dev/owner-uid"
)

// DefaultEvictor is the default evictor plugin.
//
// +k8s:deepcopy-gen=false
type DefaultEvictor struct {
	args      *DefaultEvictorArgs
	handle    framework.Handle
	threshold int32
	protected map[PodProtection]bool
	selector  labels.Selector
	nodeSel   labels.Selector

	fitter *nodefit.Fitter
	// nsSel and namespaces: namespaceLabelSelector (nil when not set).
	nsSel      labels.Selector
	namespaces corelisters.NamespaceLister
	// pvcs and storageClasses: podProtections.config.PodsWithPVC.protectedStorageClasses (nil when
	// every pod with a claim is protected).
	pvcs           corelisters.PersistentVolumeClaimLister
	storageClasses map[string]bool
	pdbs           policylisters.PodDisruptionBudgetLister
	owners         cache.Indexer
	now            func() time.Time
	// logger is the factory context's (it names the profile and the plugin).
	logger klog.Logger
}

var (
	_ framework.EvictorPlugin = &DefaultEvictor{}
	_ framework.CycleHook     = &DefaultEvictor{}
)

// New builds the plugin from its (defaulted, validated) args.
func New(ctx context.Context, obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
	args, ok := obj.(*DefaultEvictorArgs)
	if !ok {
		return nil, fmt.Errorf("want args of type DefaultEvictorArgs, got %T", obj)
	}
	d := &DefaultEvictor{args: args, handle: h, logger: klog.FromContext(ctx), now: time.Now, protected: map[PodProtection]bool{},
		selector: labels.Everything(), nodeSel: labels.Everything()}
	for _, p := range defaultProtections {
		d.protected[p] = true
	}
	for _, p := range args.PodProtections.DefaultDisabled {
		d.protected[p] = false
	}
	for _, p := range args.PodProtections.ExtraEnabled {
		d.protected[p] = true
	}
	// The upstream booleans.
	legacy := map[PodProtection]bool{PodsWithLocalStorage: args.EvictLocalStoragePods, DaemonSetPods: args.EvictDaemonSetPods,
		SystemCriticalPods: args.EvictSystemCriticalPods, FailedBarePods: args.EvictFailedBarePods}
	for p, evict := range legacy {
		if evict {
			d.protected[p] = false
		}
	}
	if args.IgnorePvcPods {
		d.protected[PodsWithPVC] = true
	}
	if args.IgnorePodsWithoutPDB {
		d.protected[PodsWithoutPDB] = true
	}

	switch t := args.PriorityThreshold; {
	case t != nil && t.Value != nil:
		d.threshold = *t.Value
	case t != nil && t.Name != "":
		pc, err := h.ClientSet().SchedulingV1().PriorityClasses().Get(context.TODO(), t.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("resolving priorityThreshold.name %q: %w", t.Name, err)
		}
		d.threshold = pc.Value
	default:
		d.threshold = schedulingapi.SystemCriticalPriority
	}
	if args.LabelSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(args.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("labelSelector: %w", err)
		}
		d.selector = s
	}
	if sel := args.NamespaceLabelSelector; sel != nil && (len(sel.MatchLabels) > 0 || len(sel.MatchExpressions) > 0) {
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			return nil, fmt.Errorf("namespaceLabelSelector: %w", err)
		}
		d.nsSel = s
		d.namespaces = h.SharedInformerFactory().Core().V1().Namespaces().Lister()
	}
	if c := args.PodProtections.Config; d.protected[PodsWithPVC] && c != nil && c.PodsWithPVC != nil && len(c.PodsWithPVC.ProtectedStorageClasses) > 0 {
		d.storageClasses = map[string]bool{}
		for _, sc := range c.PodsWithPVC.ProtectedStorageClasses {
			d.storageClasses[sc.Name] = true
		}
		d.pvcs = h.SharedInformerFactory().Core().V1().PersistentVolumeClaims().Lister()
	}
	if args.NodeSelector != "" {
		s, err := labels.Parse(args.NodeSelector)
		if err != nil {
			return nil, fmt.Errorf("nodeSelector: %w", err)
		}
		d.nodeSel = s
	}
	if args.NodeFit {
		d.fitter = nodefit.ForHandle(ctx, h, args.MissingCRPolicy)
	}
	if d.protected[PodsWithoutPDB] {
		d.pdbs = h.SharedInformerFactory().Policy().V1().PodDisruptionBudgets().Lister()
	}
	if args.MinReplicas > 1 {
		informer := h.SharedInformerFactory().Core().V1().Pods().Informer()
		if _, ok := informer.GetIndexer().GetIndexers()[ownerUIDIndex]; !ok {
			if err := informer.AddIndexers(cache.Indexers{ownerUIDIndex: ownerUIDs}); err != nil {
				return nil, err
			}
		}
		d.owners = informer.GetIndexer()
	}
	return d, nil
}

func ownerUIDs(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	out := make([]string, 0, len(pod.OwnerReferences))
	for _, o := range pod.OwnerReferences {
		out = append(out, string(o.UID))
	}
	return out, nil
}

// Name returns the plugin's name.
func (d *DefaultEvictor) Name() string { return Name }

// Filter applies the cheap rules; see the package documentation.
func (d *DefaultEvictor) Filter(pod *corev1.Pod) bool {
	ok, why := d.filter(pod)
	if !ok && d.logger.V(5).Enabled() {
		d.logger.Info("Pod not evictable", "pod", klog.KObj(pod), "reason", why)
	}
	return ok
}

func (d *DefaultEvictor) filter(pod *corev1.Pod) (bool, string) {
	if _, ok := pod.Annotations[mirrorAnnotation]; ok {
		return false, "mirror pod"
	}
	if src, ok := pod.Annotations[configSourceAnnotation]; ok && src != "api" {
		return false, "static pod"
	}
	if pod.DeletionTimestamp != nil {
		return false, "terminating"
	}
	if !d.selector.Matches(labels.Set(pod.Labels)) {
		return false, "labelSelector does not match"
	}
	if d.nsSel != nil {
		ns, err := d.namespaces.Get(pod.Namespace)
		if err != nil || !d.nsSel.Matches(labels.Set(ns.Labels)) {
			return false, "namespace does not match namespaceLabelSelector"
		}
	}
	if d.args.MinPodAge != nil && d.now().Sub(pod.CreationTimestamp.Time) < d.args.MinPodAge.Duration {
		return false, "younger than minPodAge"
	}
	if d.args.NoEvictionPolicy == MandatoryNoEvictionPolicy {
		if _, ok := pod.Annotations[PreferNoEvictionAnnotation]; ok {
			return false, "prefer-no-eviction annotation with the Mandatory policy"
		}
	}
	if _, ok := pod.Annotations[EvictAnnotation]; ok {
		return true, ""
	}
	owners := pod.OwnerReferences
	if d.protected[DaemonSetPods] && slices.ContainsFunc(owners, func(o metav1.OwnerReference) bool { return o.Kind == "DaemonSet" }) {
		return false, "DaemonSet pod"
	}
	if d.protected[SystemCriticalPods] && d.isSystemCritical(pod) {
		return false, "system-critical pod"
	}
	if len(owners) == 0 {
		if pod.Status.Phase == corev1.PodFailed {
			if d.protected[FailedBarePods] {
				return false, "failed bare pod"
			}
		} else if d.protected[BarePods] {
			return false, "bare pod"
		}
	}
	if d.protected[PodsWithLocalStorage] && slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.HostPath != nil || v.EmptyDir != nil }) {
		return false, "pod with local storage"
	}
	if d.protected[PodsWithPVC] {
		if why, protected := d.pvcProtected(pod); protected {
			return false, why
		}
	}
	if d.protected[PodsWithResourceClaims] && len(pod.Spec.ResourceClaims) > 0 {
		return false, "pod with ResourceClaims"
	}
	if d.protected[PodsWithoutPDB] && !d.hasPDB(pod) {
		return false, "pod without a PodDisruptionBudget"
	}
	return true, ""
}

// pvcProtected applies PodsWithPVC: every pod with a claim is protected, or, with
// protectedStorageClasses, a pod with a claim of one of those classes. A claim that cannot be read,
// or has no class, protects its pod (better kept than evicted on a guess).
func (d *DefaultEvictor) pvcProtected(pod *corev1.Pod) (string, bool) {
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		if d.storageClasses == nil {
			return "pod with a PersistentVolumeClaim", true
		}
		claim, err := d.pvcs.PersistentVolumeClaims(pod.Namespace).Get(v.PersistentVolumeClaim.ClaimName)
		if err != nil {
			return fmt.Sprintf("PersistentVolumeClaim %s cannot be read: %v", v.PersistentVolumeClaim.ClaimName, err), true
		}
		if claim.Spec.StorageClassName == nil || *claim.Spec.StorageClassName == "" {
			return fmt.Sprintf("PersistentVolumeClaim %s has no storage class", claim.Name), true
		}
		if d.storageClasses[*claim.Spec.StorageClassName] {
			return fmt.Sprintf("PersistentVolumeClaim %s of protected storage class %s", claim.Name, *claim.Spec.StorageClassName), true
		}
	}
	return "", false
}

func (d *DefaultEvictor) isSystemCritical(pod *corev1.Pod) bool {
	if pod.Spec.PriorityClassName == schedulingapi.SystemClusterCritical || pod.Spec.PriorityClassName == schedulingapi.SystemNodeCritical {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= d.threshold
}

func (d *DefaultEvictor) hasPDB(pod *corev1.Pod) bool {
	pdbs, err := d.pdbs.PodDisruptionBudgets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return false
	}
	for _, pdb := range pdbs {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(pod.Labels)) {
			return true
		}
	}
	return false
}

// PreEvictionFilter applies minReplicas and, with nodeFit, checks that the pod fits another Ready node.
func (d *DefaultEvictor) PreEvictionFilter(pod *corev1.Pod) bool {
	if d.args.MinReplicas > 1 && len(pod.OwnerReferences) > 0 {
		siblings, err := d.owners.ByIndex(ownerUIDIndex, string(pod.OwnerReferences[0].UID))
		if err != nil || len(siblings) < int(d.args.MinReplicas) {
			d.logger.V(5).Info("Pod not evictable", "pod", klog.KObj(pod), "reason", "owner has fewer pods than minReplicas", "pods", len(siblings))
			return false
		}
	}
	if !d.args.NodeFit {
		return true
	}
	node, ok := d.fitsOtherNode(pod)
	if !ok {
		d.logger.V(4).Info("Pod not evictable: it fits no other Ready node", "pod", klog.KObj(pod))
		return false
	}
	d.logger.V(5).Info("Pod fits another node", "pod", klog.KObj(pod), "node", node)
	return true
}

func (d *DefaultEvictor) fitsOtherNode(pod *corev1.Pod) (string, bool) {
	// The nodeSelector's nodes, from the cycle's node list (Handle.Nodes).
	nodes, err := d.handle.Nodes(d.nodeSel)
	if err != nil {
		return "", false
	}
	if node, ok := d.fitter.FitsAnyOther(pod, nodes, nil); ok {
		return node.Name, true
	}
	return "", false
}

// BeginCycle implements framework.CycleHook; nothing to do.
func (d *DefaultEvictor) BeginCycle(context.Context) {}

// EndCycle implements framework.CycleHook: it drops the per-node totals nodeFit kept during the
// cycle, so that nothing is held between cycles (they are rebuilt on demand, and the totals are
// checked against the informer cache on every use either way).
func (d *DefaultEvictor) EndCycle(context.Context) {
	if d.fitter != nil {
		d.fitter.Reset()
	}
}
