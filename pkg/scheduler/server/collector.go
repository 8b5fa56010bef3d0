package server

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/klog/v2"
	schedulerserverconfig "k8s.io/kubernetes/cmd/kube-scheduler/app/config"

	accordclient "github.com/accord-sched/accord/pkg/generated/clientset/versioned"
	"github.com/accord-sched/accord/pkg/scheduler/crcache"
	"github.com/accord-sched/accord/pkg/scheduler/plugins/reservation"
)

// AccordOptions are accord-scheduler's own flags, beside kube-scheduler's (AccordFlags names them).
type AccordOptions struct {
	// ReservationRetention is --reservation-retention: how long the reservation collector keeps a
	// finished reservation.
	ReservationRetention time.Duration
}

// AccordFlags are the flags accord-scheduler has and kube-scheduler has not.
var AccordFlags = []string{"reservation-retention"}

// NewAccordOptions returns the defaults.
func NewAccordOptions() *AccordOptions {
	return &AccordOptions{ReservationRetention: reservation.DefaultRetention}
}

// AddFlags adds the options to fs.
func (a *AccordOptions) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&a.ReservationRetention, "reservation-retention", a.ReservationRetention,
		"How long a finished Reservation (Bound, Expired or Failed) is kept before accord-scheduler's reservation collector deletes it, counted from its status.completionTime. At least 1s; it runs when a profile enables the Reservation plugin, on the leader only.")
}

// reservationCollector builds the reservation collector when a profile enables the Reservation
// plugin (the plugin's cache then has the Reservation informer; nil otherwise).
func reservationCollector(ctx context.Context, cc *schedulerserverconfig.CompletedConfig, crs *crcache.Cache, a *AccordOptions) (*reservation.Collector, error) {
	inf := crs.ReservationInformer()
	if inf == nil {
		return nil, nil
	}
	jsonCfg := rest.CopyConfig(cc.KubeConfig)
	jsonCfg.ContentType, jsonCfg.AcceptContentTypes = "application/json", "application/json"
	jsonCfg.UserAgent = "accord-scheduler-reservation-collector"
	accord, err := accordclient.NewForConfig(jsonCfg)
	if err != nil {
		return nil, fmt.Errorf("the reservation collector's client: %w", err)
	}
	md, err := metadata.NewForConfig(jsonCfg)
	if err != nil {
		return nil, fmt.Errorf("the reservation collector's metadata client: %w", err)
	}
	c, err := reservation.NewCollector(reservation.CollectorConfig{
		Accord: accord, Reservations: inf, Nodes: cc.InformerFactory.Core().V1().Nodes().Informer(),
		Metadata: md, Mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cc.Client.Discovery())),
		Retention: a.ReservationRetention, IsLeader: leads(cc),
	})
	if err != nil {
		return nil, err
	}
	klog.FromContext(ctx).Info("Finished reservations are deleted after the retention", "retention", a.ReservationRetention)
	return c, nil
}

// runBeside runs run in a goroutine until ctx ends, logging an error it stops with (what, the
// consequence), and returns a function that waits for it and returns that error.
func runBeside(ctx context.Context, run func(context.Context) error, what string) func() error {
	done := make(chan error, 1)
	go func() {
		err := run(ctx)
		if err != nil {
			klog.FromContext(ctx).Error(err, what)
		}
		done <- err
	}()
	return func() error { return <-done }
}
