package crcache

import (
	"context"

	fwk "k8s.io/kube-scheduler/framework"

	"github.com/accord-sched/accord/pkg/crdcheck"
	schedinformers "github.com/accord-sched/accord/pkg/generated/informers/externalversions/scheduling/v1alpha1"
	schedlisters "github.com/accord-sched/accord/pkg/generated/listers/scheduling/v1alpha1"
)

// ReservationResource is the EventResource under which the scheduler reports Reservation events.
const ReservationResource = "reservations.v1alpha1.scheduling.accord.dev"

// Reservations returns a synced lister of Reservations (all namespaces); see ClusterScopedResources.
// With a factory of the caller's (NewForFactory) the lister is fed once the caller starts it.
func (c *Cache) Reservations(ctx context.Context, h fwk.Handle) (schedlisters.ReservationLister, error) {
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
	c.synced = append(c.synced, informer.HasSynced)
	c.reservations = true
	external := c.external
	c.mu.Unlock()
	if !external {
		if err := c.startAndSync(ctx, f, "Reservation", informer.HasSynced); err != nil {
			return nil, err
		}
	}
	return inf.Lister(), nil
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
