// Package component is the skeleton of Accord's own binaries (accord-descheduler,
// accord-metrics-reporter, accord-console): their command (NewCommand: flags, validation, a context
// that ends on SIGTERM), the options they share (Base: logging, feature gates, --version;
// ServingOptions: leader election, the secure port and its delegated authentication and
// authorisation), and the secure port's /healthz, /readyz and /metrics with the leader Lease
// (ServingOptions.Run). accord-scheduler gets the same from kube-scheduler's own command.
package component

import (
	"context"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	componentbaseconfig "k8s.io/component-base/config"
	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"
)

// NewLeaderStatus returns leader_election_master_status{name}: 1 while this replica holds the Lease
// `name`, else 0. It is the gauge kube-scheduler exports (client-go's leader election through
// component-base's metrics provider), under the same name and label, so one alert rule watches the
// leader of every component. Register it with the component's registry and give it to Serving.
func NewLeaderStatus() *metrics.GaugeVec {
	return metrics.NewGaugeVec(&metrics.GaugeOpts{
		Name:           "leader_election_master_status",
		Help:           "1 while this replica is the leader of the Lease `name`, 0 while it is not.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"name"})
}

// RunLeading runs run while this replica holds the lock cfg names, and returns when ctx ends or
// leadership is lost; its error is run's. The lock is released when ctx is cancelled, so a clean
// shutdown hands over at once, and health reports a replica whose renewals stopped. component names
// the binary in the client's user agent and in the log lines. status (NewLeaderStatus; nil: none)
// is set to 0 for the Lease's name at once, to 1 while leading.
func RunLeading(ctx context.Context, restCfg *rest.Config, cfg componentbaseconfig.LeaderElectionConfiguration,
	component string, health *leaderelection.HealthzAdaptor, status *metrics.GaugeVec, run func(context.Context) error) error {
	client, err := kubernetes.NewForConfig(rest.AddUserAgent(restCfg, component+"-leader-election"))
	if err != nil {
		return err
	}
	host, err := os.Hostname()
	if err != nil {
		return err
	}
	// The time of day tells two replicas on one host (or one pod restarted) apart.
	id := host + "_" + metav1.Now().Format("150405.000000")
	lock, err := resourcelock.New(cfg.ResourceLock, cfg.ResourceNamespace, cfg.ResourceName,
		client.CoreV1(), client.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		return err
	}
	setLeading(status, cfg.ResourceName, false)
	var runErr error
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   cfg.LeaseDuration.Duration,
		RenewDeadline:   cfg.RenewDeadline.Duration,
		RetryPeriod:     cfg.RetryPeriod.Duration,
		WatchDog:        health,
		Name:            cfg.ResourceName,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				klog.FromContext(ctx).Info("Leading; starting", "component", component, "identity", id)
				setLeading(status, cfg.ResourceName, true)
				runErr = run(ctx)
			},
			OnStoppedLeading: func() {
				setLeading(status, cfg.ResourceName, false)
				klog.FromContext(ctx).Info("Leadership lost or released", "component", component, "identity", id)
			},
		},
	})
	if err != nil {
		return err
	}
	// The elector logs that it waits for the lease, and each attempt.
	elector.Run(ctx)
	return runErr
}

// setLeading sets status{name} to 1 when leading, else 0; a nil status is left alone.
func setLeading(status *metrics.GaugeVec, name string, leading bool) {
	if status == nil {
		return
	}
	v := 0.0
	if leading {
		v = 1
	}
	status.WithLabelValues(name).Set(v)
}
