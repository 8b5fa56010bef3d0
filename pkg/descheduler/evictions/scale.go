package evictions

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/klog/v2"
)

// ScaleReader returns the desired replicas of a controller of a kind the descheduler has no
// informer for, from its scale subresource (an Argo Rollout, an OpenKruise CloneSet, any CRD with
// `subresources.scale`). ok is false when the owner has no scale subresource or it cannot be read;
// the budget then counts the owner's live pods as its replicas.
type ScaleReader func(ctx context.Context, namespace string, owner metav1.OwnerReference) (replicas int, ok bool)

// scaleTTL is how long a read scale is reused: budgets are checked per candidate, a scale read is a
// request to the apiserver.
const scaleTTL = 10 * time.Second

type scaleEntry struct {
	replicas int
	ok       bool
	at       time.Time
}

// NewScaleReader reads scale subresources with the discovery and REST clients of the descheduler's
// clientset, resolving an owner's apiVersion and kind to its resource with discovery (refreshed when a
// kind is not found). Results, failures included, are kept for 10 s per owner UID.
func NewScaleReader(disco discovery.DiscoveryInterface, restClient rest.Interface) ScaleReader {
	cached := memory.NewMemCacheClient(disco)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cached)
	scales := scale.New(restClient, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(cached))
	var mu sync.Mutex
	seen := map[types.UID]scaleEntry{}
	return func(ctx context.Context, namespace string, owner metav1.OwnerReference) (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		if e, ok := seen[owner.UID]; ok && now.Sub(e.at) < scaleTTL {
			return e.replicas, e.ok
		}
		for uid, e := range seen {
			if now.Sub(e.at) >= scaleTTL {
				delete(seen, uid)
			}
		}
		replicas, err := readScale(ctx, mapper, scales, namespace, owner)
		if err != nil {
			klog.FromContext(ctx).V(2).Info("No scale subresource read for a workload; its live pods count as its replicas",
				"owner", fmt.Sprintf("%s %s/%s", owner.Kind, namespace, owner.Name), "apiVersion", owner.APIVersion, "err", err)
		}
		seen[owner.UID] = scaleEntry{replicas: replicas, ok: err == nil, at: now}
		return replicas, err == nil
	}
}

func readScale(ctx context.Context, mapper *restmapper.DeferredDiscoveryRESTMapper, scales scale.ScalesGetter, namespace string, owner metav1.OwnerReference) (int, error) {
	gv, err := schema.ParseGroupVersion(owner.APIVersion)
	if err != nil {
		return 0, err
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: owner.Kind}
	m, err := mapper.RESTMapping(gk, gv.Version)
	if err != nil {
		// A kind created after discovery was cached: look again once.
		mapper.Reset()
		if m, err = mapper.RESTMapping(gk, gv.Version); err != nil {
			return 0, err
		}
	}
	s, err := scales.Scales(namespace).Get(ctx, m.Resource.GroupResource(), owner.Name, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	if s.UID != "" && s.UID != owner.UID {
		return 0, fmt.Errorf("the %s named %s is another object (uid %s, the pod's owner is %s)", owner.Kind, owner.Name, s.UID, owner.UID)
	}
	return int(s.Spec.Replicas), nil
}
