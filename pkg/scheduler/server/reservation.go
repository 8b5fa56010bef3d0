package server

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	schedulerserverconfig "k8s.io/kubernetes/cmd/kube-scheduler/app/config"
	"k8s.io/kubernetes/pkg/scheduler"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/accord-sched/accord/pkg/scheduler/crcache"
	"github.com/accord-sched/accord/pkg/scheduler/frameworks"
	"github.com/accord-sched/accord/pkg/scheduler/plugins/reservation"
)

// reservationPlacer builds the reservation placer when a profile of the scheduler enables the
// Reservation plugin (nil otherwise), with those profiles and the scheduler's plugin registry
// (kube-scheduler's in-tree plugins and the out-of-tree ones opts register), sharing the Reservation
// informer of crs, which the Reservation plugin started. Call it after Setup
// and before Run: its frameworks register their informers with the scheduler's factory, which Run
// starts.
func reservationPlacer(ctx context.Context, cc *schedulerserverconfig.CompletedConfig, sched *scheduler.Scheduler, crs *crcache.Cache, opts []app.Option) (*reservation.Placer, error) {
	var profiles []schedconfig.KubeSchedulerProfile
	for _, prof := range cc.ComponentConfig.Profiles {
		fw := sched.Profiles[prof.SchedulerName]
		if fw == nil {
			continue
		}
		enabled := func(set []schedconfig.Plugin) bool {
			return slices.ContainsFunc(set, func(p schedconfig.Plugin) bool { return p.Name == reservation.Name })
		}
		if plugins := fw.ListPlugins(); enabled(plugins.PreFilter.Enabled) {
			// Its Reserve serialises the profile's pods with the placements (reservation.Ledger).
			if !enabled(plugins.Reserve.Enabled) {
				return nil, fmt.Errorf("profile %q enables the %s plugin at preFilter but not at reserve: enable it at multiPoint (or at preFilter, filter and reserve)", prof.SchedulerName, reservation.Name)
			}
			profiles = append(profiles, prof)
		}
	}
	if len(profiles) == 0 {
		return nil, nil
	}
	outOfTree := frameworkruntime.Registry{}
	for _, o := range opts {
		if err := o(outOfTree); err != nil {
			return nil, err
		}
	}
	registry, err := frameworks.Registry(outOfTree)
	if err != nil {
		return nil, err
	}
	p, err := reservation.NewPlacer(ctx, reservation.PlacerConfig{
		Profiles:               profiles,
		ComponentConfigVersion: cc.ComponentConfig.APIVersion,
		Registry:               registry,
		Client:                 cc.Client,
		KubeConfig:             cc.KubeConfig,
		InformerFactory:        cc.InformerFactory,
		Reservations:           crs.ReservationInformer(),
		SchedulerCache:         sched.Cache,
		Ledger:                 reservation.LedgerOf(crs),
		CRs:                    crs,
		IsLeader:               leads(cc),
	})
	if err != nil {
		return nil, fmt.Errorf("the %s plugin's placer: %w", reservation.Name, err)
	}
	names := make([]string, len(profiles))
	for i, prof := range profiles {
		names[i] = prof.SchedulerName
	}
	klog.FromContext(ctx).Info("Reservations are placed with the profiles that enable the Reservation plugin", "profiles", names)
	return p, nil
}

// leads tells whether this replica holds the scheduler's leader Lease (the holder identity is its
// own), for the placer: only the leader places reservations. Nil without leader election.
func leads(cc *schedulerserverconfig.CompletedConfig) func(ctx context.Context) (bool, error) {
	if cc.LeaderElection == nil || cc.LeaderElection.Lock == nil {
		return nil
	}
	lock := cc.LeaderElection.Lock
	return func(ctx context.Context) (bool, error) {
		rec, _, err := lock.Get(ctx)
		if err != nil {
			return false, err
		}
		return rec.HolderIdentity == lock.Identity(), nil
	}
}
