package removeduplicates

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// Name is the plugin's name.
const Name = "RemoveDuplicates"

// Plugin is the RemoveDuplicates plugin.
//
// +k8s:deepcopy-gen=false
type Plugin struct {
	h    framework.Handle
	args *RemoveDuplicatesArgs
	sel  *pluginutil.PodSelector
	// owners is the pod informer's indexer with ownerIndex; nil when it could not be added (then
	// NodeVerdict scans the namespace).
	owners cache.Indexer
}

var _ framework.BalancePlugin = &Plugin{}

// New builds the plugin from its (defaulted, validated) args.
func New(ctx context.Context, obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
	args, ok := obj.(*RemoveDuplicatesArgs)
	if !ok {
		return nil, fmt.Errorf("%s: want args of type RemoveDuplicatesArgs, got %T", Name, obj)
	}
	sel, err := pluginutil.NewPodSelector(args.Namespaces, nil)
	if err != nil {
		return nil, err
	}
	p := &Plugin{h: h, args: args, sel: sel}
	if f := h.SharedInformerFactory(); f != nil {
		inf := f.Core().V1().Pods().Informer()
		if _, ok := inf.GetIndexer().GetIndexers()[ownerIndex]; ok {
			p.owners = inf.GetIndexer()
		} else if err := inf.AddIndexers(cache.Indexers{ownerIndex: ownerIndexFunc}); err == nil {
			p.owners = inf.GetIndexer()
		} else {
			klog.FromContext(ctx).Info("Cannot index pods by owner; NodeVerdict scans the namespace", "plugin", Name, "err", err)
		}
	}
	return p, nil
}

// ownerIndex indexes pods by "namespace/kind/name" of each owner, so NodeVerdict reads the pods of
// one owner instead of every pod of the namespace for each candidate SchedulerSimulation checks.
const ownerIndex = "accord.dev/owner"

func ownerIndexFunc(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || len(pod.OwnerReferences) == 0 {
		return nil, nil
	}
	keys := make([]string, 0, len(pod.OwnerReferences))
	for _, o := range pod.OwnerReferences {
		keys = append(keys, ownerIndexKey(pod.Namespace, o.Kind, o.Name))
	}
	return keys, nil
}

func ownerIndexKey(namespace, kind, name string) string { return namespace + "/" + kind + "/" + name }

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// ownerKey identifies pods that duplicate each other: same namespace, owner and container images.
type ownerKey struct {
	namespace, kind, name string
	// images are the pod's container images, sorted and joined (the single image, without
	// allocating, for the usual one-container pod).
	images string
}

func (k ownerKey) String() string { return k.namespace + "/" + k.kind + "/" + k.name + "/" + k.images }

// ownerKeys appends to dst one key per owner of the pod; none for a bare pod or one owned by an
// excluded kind.
func (p *Plugin) ownerKeys(dst []ownerKey, pod *corev1.Pod) []ownerKey {
	if len(pod.OwnerReferences) == 0 {
		return dst
	}
	var images string
	if len(pod.Spec.Containers) == 1 {
		images = pod.Spec.Containers[0].Image
	} else {
		list := make([]string, 0, len(pod.Spec.Containers))
		for _, c := range pod.Spec.Containers {
			list = append(list, c.Image)
		}
		slices.Sort(list)
		images = strings.Join(list, "/")
	}
	start := len(dst)
	for _, o := range pod.OwnerReferences {
		if slices.Contains(p.args.ExcludeOwnerKinds, o.Kind) {
			return dst[:start]
		}
		dst = append(dst, ownerKey{namespace: pod.Namespace, kind: o.Kind, name: o.Name, images: images})
	}
	return dst
}

type ownerState struct {
	total int
	// dups are, per node, the pods beyond the first of this owner on the node.
	dups  map[string][]*corev1.Pod
	first *corev1.Pod
}

// Balance evicts, for every owner with several pods on one node, the pods above
// ceil(owner's pods / nodes the owner could run on) on each node. Owners that could run on fewer
// than two nodes are left alone.
func (p *Plugin) Balance(ctx context.Context, nodes []*corev1.Node) *framework.Status {
	logger := klog.FromContext(ctx)
	ev := p.h.Evictor()
	type dupEntry struct {
		key  ownerKey
		node string
	}
	owners := map[ownerKey]*ownerState{}
	var order []dupEntry
	var keys []ownerKey
	seen := map[ownerKey]bool{}
	for _, node := range nodes {
		pods, err := p.h.GetPodsAssignedToNode(node.Name, p.sel.Candidates(ev, false, nil))
		if err != nil {
			return framework.NewStatus(err)
		}
		clear(seen)
		for _, pod := range pods {
			keys = p.ownerKeys(keys[:0], pod)
			dup := len(keys) > 0
			for _, k := range keys {
				if !seen[k] {
					dup = false
				}
			}
			for _, k := range keys {
				s := owners[k]
				if s == nil {
					s = &ownerState{dups: map[string][]*corev1.Pod{}, first: pod}
					owners[k] = s
				}
				s.total++
				if dup {
					if len(s.dups[node.Name]) == 0 {
						order = append(order, dupEntry{key: k, node: node.Name})
					}
					s.dups[node.Name] = append(s.dups[node.Name], pod)
				}
				seen[k] = true
			}
		}
	}
	targets := map[ownerKey]int{}
	byPlacement := map[string]int{} // placementKey -> nodes a PlacementChecker allows
	var placement []byte
	evicted := map[*corev1.Pod]bool{}
	for _, entry := range order {
		key, nodeName := entry.key, entry.node
		s := owners[key]
		n, ok := targets[key]
		if !ok {
			// Owners whose first pods ask for the same placement (node selector, required node
			// affinity, tolerations) can run on the same nodes: count those once.
			var cacheable bool
			placement, cacheable = placementKey(placement[:0], s.first)
			if c, hit := byPlacement[string(placement)]; cacheable && hit {
				n = c
			} else {
				checker := pluginutil.NewPlacementChecker(s.first)
				for _, node := range nodes {
					if checker.Allows(node) {
						n++
					}
				}
				if cacheable {
					byPlacement[string(placement)] = n
				}
			}
			targets[key] = n
		}
		if n < 2 {
			logger.V(4).Info("Owner's pods could run on fewer than two nodes; not spreading them", "owner", key.String())
			continue
		}
		upper := (s.total + n - 1) / n
		dups := s.dups[nodeName]
		excess := len(dups) + 1 - upper
		for i := 0; i < excess && i < len(dups); i++ {
			pod := dups[i]
			if evicted[pod] {
				continue
			}
			switch framework.Evict(ctx, ev, pod, Name, fmt.Sprintf("%d pods of the same owner on node %s, at most %d wanted", len(dups)+1, nodeName, upper)) {
			case framework.Evicted:
				evicted[pod] = true
			case framework.StopEvicting:
				return nil
			case framework.NodeFull:
				i = len(dups)
			}
		}
	}
	return nil
}

// placementKey appends to dst an unambiguous encoding of what a pluginutil.PlacementChecker reads
// from the pod: its nodeSelector, required node affinity and tolerations (protobuf, length
// prefixed). Pods with equal keys are allowed on the same nodes. ok is false when a part could not
// be encoded; the key is then not to be used.
func placementKey(dst []byte, pod *corev1.Pod) (_ []byte, ok bool) {
	str := func(b []byte) {
		dst = strconv.AppendInt(dst, int64(len(b)), 10)
		dst = append(dst, ':')
		dst = append(dst, b...)
	}
	if n := len(pod.Spec.NodeSelector); n > 0 {
		keys := make([]string, 0, n)
		for k := range pod.Spec.NodeSelector {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = strconv.AppendInt(dst, int64(n), 10)
		for _, k := range keys {
			str([]byte(k))
			str([]byte(pod.Spec.NodeSelector[k]))
		}
	}
	dst = append(dst, '|')
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		b, err := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.Marshal()
		if err != nil {
			return dst, false
		}
		str(b)
	}
	dst = append(dst, '|')
	for i := range pod.Spec.Tolerations {
		b, err := pod.Spec.Tolerations[i].Marshal()
		if err != nil {
			return dst, false
		}
		str(b)
	}
	return dst, true
}
