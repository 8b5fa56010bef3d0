package crcache

import (
	"context"
	"fmt"

	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/crdcheck"
	schedinformers "github.com/accord-sched/accord/pkg/generated/informers/externalversions/scheduling/v1alpha1"
)

// ReservationResource is the EventResource under which the scheduler reports Reservation events.
const ReservationResource = "reservations.v1alpha1.scheduling.accord.dev"

// Indexes of the Reservation informer, so that the scheduler finds a pod's reservations and a
// node's held room without listing every reservation (finished ones included) for each pod.
const (
	// IndexReservationOwner keys a reservation by each of its owners: OwnerPodKey for a pod owner,
	// OwnerControllerKey for a controller owner.
	IndexReservationOwner = "accord.dev/reservation-owner"
	// IndexReservationNode keys an Available reservation by status.nodeName; reservations in any
	// other phase are not in this index.
	IndexReservationNode = "accord.dev/reservation-node"
)

// OwnerPodKey is the IndexReservationOwner key of the pod named name in namespace ns.
func OwnerPodKey(ns, name string) string { return ns + "/pod/" + name }

// OwnerControllerKey is the IndexReservationOwner key of the pods in ns whose controller has uid.
func OwnerControllerKey(ns, uid string) string { return ns + "/controller/" + uid }

// ReservationIndexers are the indexes Reservations adds to the Reservation informer.
func ReservationIndexers() cache.Indexers {
	return cache.Indexers{IndexReservationOwner: reservationOwnerKeys, IndexReservationNode: reservationNodeKeys}
}

func reservationOwnerKeys(obj any) ([]string, error) {
	r, ok := obj.(*schedv1alpha1.Reservation)
	if !ok {
		return nil, fmt.Errorf("reservation owner index: %T is not a Reservation", obj)
	}
	keys := make([]string, 0, len(r.Spec.Owners))
	for _, o := range r.Spec.Owners {
		switch {
		case o.Pod != nil:
			keys = append(keys, OwnerPodKey(r.Namespace, o.Pod.Name))
		case o.Controller != nil:
			keys = append(keys, OwnerControllerKey(r.Namespace, string(o.Controller.UID)))
		}
	}
	return keys, nil
}

func reservationNodeKeys(obj any) ([]string, error) {
	r, ok := obj.(*schedv1alpha1.Reservation)
	if !ok {
		return nil, fmt.Errorf("reservation node index: %T is not a Reservation", obj)
	}
	if r.Status.Phase != schedv1alpha1.ReservationAvailable || r.Status.NodeName == "" {
		return nil, nil
	}
	return []string{r.Status.NodeName}, nil
}

// hasIndexers reports whether every one of want is already an index of informer.
func hasIndexers(informer cache.SharedIndexInformer, want cache.Indexers) bool {
	have := informer.GetIndexer().GetIndexers()
	for name := range want {
		if _, ok := have[name]; !ok {
			return false
		}
	}
	return true
}

// Reservations returns the Reservation informer (all namespaces), synced, with the
// IndexReservationOwner and IndexReservationNode indexes; see ClusterScopedResources. With a factory
// of the caller's (NewForFactory) it is fed once the caller starts it.
func (c *Cache) Reservations(ctx context.Context, h fwk.Handle) (schedinformers.ReservationInformer, error) {
	f, err := c.factoryFor(h)
	if err != nil {
		return nil, err
	}
	if err := c.require(crdcheck.Reservations()); err != nil {
		return nil, err
	}
	inf := f.Scheduling().V1alpha1().Reservations()
	informer := inf.Informer()
	c.mu.Lock()
	if !c.reservations && !hasIndexers(informer, ReservationIndexers()) {
		// Another Cache over the same factory (the descheduler's SchedulerSimulation builds one per
		// profile) may have added them already.
		if err := informer.AddIndexers(ReservationIndexers()); err != nil {
			c.mu.Unlock()
			return nil, fmt.Errorf("indexing reservations: %w", err)
		}
	}
	c.synced = append(c.synced, informer.HasSynced)
	c.reservations = true
	external := c.external
	c.mu.Unlock()
	if !external {
		if err := c.startAndSync(ctx, f, "Reservation", informer.HasSynced); err != nil {
			return nil, err
		}
	}
	return inf, nil
}

// ReservationInformer returns the Reservation informer Reservations started (nil when no plugin has
// asked for Reservations), for the reservation placer to share instead of watching them twice.
func (c *Cache) ReservationInformer() schedinformers.ReservationInformer {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.factory == nil || !c.reservations {
		return nil
	}
	return c.factory.Scheduling().V1alpha1().Reservations()
}

// Shared returns the value stored under key, built by build on the first call: state that the
// plugins of one scheduler (its profiles' frameworks and the frameworks built beside them, which all
// read this Cache) must share, such as the Reservation plugin's ledger.
func (c *Cache) Shared(key string, build func() any) any {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.shared[key]; ok {
		return v
	}
	if c.shared == nil {
		c.shared = map[string]any{}
	}
	v := build()
	c.shared[key] = v
	return v
}
