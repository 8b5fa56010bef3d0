package crcache

import (
	"context"

	fwk "k8s.io/kube-scheduler/framework"

	"github.com/accord-sched/accord/pkg/crdcheck"
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
	external := c.external
	c.mu.Unlock()
	if !external {
		if err := c.startAndSync(ctx, f, "Reservation", informer.HasSynced); err != nil {
			return nil, err
		}
	}
	return inf.Lister(), nil
}
