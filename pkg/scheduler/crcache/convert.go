package crcache

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
)

// ClusterScopedResourceResource is the EventResource under which the scheduler reports
// ClusterScopedResource events to QueueingHints ("<plural>.<version>.<group>").
const ClusterScopedResourceResource = "clusterscopedresources.v1alpha1." + schedv1alpha1.GroupName

// NodeMetricResource is the EventResource under which the scheduler reports NodeMetric events.
const NodeMetricResource = "nodemetrics.v1alpha1." + slov1alpha1.GroupName

// ToClusterScopedResource turns an event object into a typed ClusterScopedResource. The scheduler
// hands QueueingHints custom resources from its dynamic informers: typed objects once
// TypeEventInformers has set them up (accord-scheduler does), *unstructured.Unstructured otherwise
// (a scheduler built with kube-scheduler's own command). Both, and tombstones, are accepted; nil
// gives nil.
func ToClusterScopedResource(obj any) (*schedv1alpha1.ClusterScopedResource, error) {
	out := &schedv1alpha1.ClusterScopedResource{}
	ok, err := convert(obj, out)
	if !ok || err != nil {
		return nil, err
	}
	return out, nil
}

// ToNodeMetric turns an event object into a typed NodeMetric; see ToClusterScopedResource.
func ToNodeMetric(obj any) (*slov1alpha1.NodeMetric, error) {
	out := &slov1alpha1.NodeMetric{}
	ok, err := convert(obj, out)
	if !ok || err != nil {
		return nil, err
	}
	return out, nil
}

func convert[T any, PT interface {
	*T
	runtime.Object
}](obj any, out PT) (bool, error) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	switch o := obj.(type) {
	case nil:
		return false, nil
	case PT:
		if o == nil {
			return false, nil
		}
		*out = *o
		return true, nil
	case *unstructured.Unstructured:
		if o == nil {
			return false, nil
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.UnstructuredContent(), out); err != nil {
			return false, fmt.Errorf("converting %s %q: %w", o.GetKind(), o.GetName(), err)
		}
		return true, nil
	default:
		return false, fmt.Errorf("unexpected object of type %T, want %T", obj, out)
	}
}

// TypeEventInformers makes the scheduler's own informers for the custom resources this Cache serves
// keep typed objects instead of *unstructured.Unstructured. kube-scheduler watches every custom
// resource a plugin registers events for (ClusterScopedResourceResource, NodeMetricResource)
// through dyn, its dynamic informer factory, and keeps each object as nested maps, several times
// the size of the typed object; at 5000 nodes those two caches were most of the memory accord-
// scheduler used beyond kube-scheduler's. The transform set here converts each object as it
// arrives and drops its managedFields, so the QueueingHints receive typed objects too (see
// ToClusterScopedResource). An object that does not convert is kept as it came, and the hints that
// receive it report the conversion error, naming the object.
//
// Both informers watch the same objects, so where the Cache's NodeIndex already holds the object at
// the same resourceVersion (the whole initial list: the Cache synced before the scheduler was built)
// the transform hands over the Cache's object instead of converting: one copy serves both, and
// neither changes it. The other way round, once this has returned, the Cache's own informers keep
// the dynamic informer's typed object when its event came first (Cache.transform): under a steady
// stream of NodeMetric updates either watch may deliver first, and each updated NodeMetric would
// otherwise be held twice until its next update.
//
// The same holds for Reservations (ReservationResource, the Reservation plugin's events): the
// dynamic informer holds the Cache's Reservation object where the Cache's informer has it at the
// same resourceVersion (found by namespace and name), a converted copy otherwise; with 1000
// finished and 100 live reservations, their nested maps made accord-scheduler's peak RSS 1.2x that
// of the same scheduler without reservations (test/scale, RESERVATIONS).
//
// Only the resources plugins asked for are touched (asking dyn for another would start a watch
// nobody registered). Call it after the scheduler is built (app.Setup registers the
// informers) and before it runs (a started informer takes no transform).
func (c *Cache) TypeEventInformers(dyn dynamicinformer.DynamicSharedInformerFactory) error {
	c.mu.Lock()
	x, csrs, metrics, reservations := c.nodes, c.csrReg != nil, c.metricReg != nil, c.reservations
	c.mu.Unlock()
	if dyn == nil {
		return nil
	}
	var stores eventStores
	if csrs {
		stores.csr = dyn.ForResource(gvrOf(ClusterScopedResourceResource)).Informer().GetStore()
		if err := setTypedTransform(dyn, ClusterScopedResourceResource, func(u *unstructured.Unstructured) *schedv1alpha1.ClusterScopedResource {
			if d := x.Get(u.GetName()); d != nil {
				return d.CR
			}
			return nil
		}); err != nil {
			return err
		}
	}
	if metrics {
		stores.metric = dyn.ForResource(gvrOf(NodeMetricResource)).Informer().GetStore()
		if err := setTypedTransform(dyn, NodeMetricResource, func(u *unstructured.Unstructured) *slov1alpha1.NodeMetric {
			if d := x.Get(u.GetName()); d != nil {
				return d.Metric
			}
			return nil
		}); err != nil {
			return err
		}
	}
	if reservations {
		stores.reservation = dyn.ForResource(gvrOf(ReservationResource)).Informer().GetStore()
		store := c.ReservationInformer().Informer().GetStore()
		if err := setTypedTransform(dyn, ReservationResource, func(u *unstructured.Unstructured) *schedv1alpha1.Reservation {
			item, ok, err := store.GetByKey(u.GetNamespace() + "/" + u.GetName())
			if err != nil || !ok {
				return nil
			}
			r, _ := item.(*schedv1alpha1.Reservation)
			return r
		}); err != nil {
			return err
		}
	}
	// From now on the Cache's informers keep the dynamic informers' object where it came first.
	c.eventStores.Store(&stores)
	return nil
}

// gvrOf is the resource of one of this package's "<plural>.<version>.<group>" constants.
func gvrOf(resource string) schema.GroupVersionResource {
	gvr, _ := schema.ParseResourceArg(resource)
	return *gvr
}

// setTypedTransform gives the dynamic informer of resource a transform to typed objects without
// managedFields; cached is the Cache's object of the same name, if any, handed over instead of a
// conversion when it has the same UID and resourceVersion.
func setTypedTransform[T any, PT interface {
	*T
	runtime.Object
	metav1.Object
}](dyn dynamicinformer.DynamicSharedInformerFactory, resource string, cached func(*unstructured.Unstructured) PT) error {
	gvr, _ := schema.ParseResourceArg(resource)
	if gvr == nil {
		return fmt.Errorf("%q is not <resource>.<version>.<group>", resource)
	}
	err := dyn.ForResource(*gvr).Informer().SetTransform(func(obj any) (any, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil
		}
		cur := cached(u)
		if cur != nil && cur.GetUID() == u.GetUID() && cur.GetResourceVersion() == u.GetResourceVersion() {
			return cur, nil
		}
		out := PT(new(T))
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), out); err != nil {
			return obj, nil
		}
		out.SetManagedFields(nil)
		return out, nil
	})
	if err != nil {
		return fmt.Errorf("typing the scheduler's %s informer: %w", resource, err)
	}
	return nil
}
