package component

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/apiserver/pkg/server/mux"
	apiserveroptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/server/routes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/component-base/metrics"
)

// Serving is what a component serves on its secure port.
type Serving struct {
	// Name names the component's mux in the apiserver library's logs.
	Name string
	// Leader, when leader election is on, fails /healthz once renewals stop.
	Leader *leaderelection.HealthzAdaptor
	// Ready is /readyz's "informer-sync" check: nil when ready, else why not.
	Ready func() error
	// Metrics is served at /metrics; nil: not served.
	Metrics http.Handler
	// LeaderStatus, when leader election is on, is set to whether this replica leads
	// (NewLeaderStatus, registered with the registry Metrics serves); nil: not exported.
	LeaderStatus *metrics.GaugeVec
	// Profiling serves pprof under /debug/pprof (to callers allowed get on /debug/pprof/*).
	Profiling bool
	// DisableHTTP2 serves HTTP/1.1 only (besides the serving options' own switch).
	DisableHTTP2 bool
}

// Serve serves s on the secure port opts describe (a self-signed certificate for localhost when
// none is given) until ctx ends, to the callers auth authenticates and authorises (see Auth); the
// returned channel closes once the server has stopped.
func Serve(ctx context.Context, opts *apiserveroptions.SecureServingOptions, auth Auth, s Serving) (<-chan struct{}, error) {
	info, err := SecureServingInfo(opts)
	if err != nil {
		return nil, err
	}
	info.DisableHTTP2 = info.DisableHTTP2 || s.DisableHTTP2
	pathMux := mux.NewPathRecorderMux(s.Name)
	checks := []healthz.HealthChecker{healthz.PingHealthz}
	if s.Leader != nil {
		checks = append(checks, s.Leader)
	}
	healthz.InstallHandler(pathMux, checks...)
	healthz.InstallReadyzHandler(pathMux, healthz.NamedCheck("informer-sync", func(*http.Request) error { return s.Ready() }))
	if s.Metrics != nil {
		pathMux.Handle("/metrics", s.Metrics)
	}
	if s.Profiling {
		routes.Profiling{}.Install(pathMux)
	}
	handler, err := auth.withAuth(pathMux, info)
	if err != nil {
		return nil, fmt.Errorf("delegated authentication and authorization: %w", err)
	}
	_, stopped, err := info.Serve(handler, 5*time.Second, ctx.Done())
	if err != nil {
		return nil, err
	}
	return stopped, nil
}

// SecureServingInfo applies opts (binding its address unless it has a Listener), with a self-signed
// certificate for localhost and 127.0.0.1, kept in memory, when opts names no certificate files
// (--tls-cert-file, --tls-private-key-file) and no certificate directory. Serve and accord-console
// serve through it.
func SecureServingInfo(opts *apiserveroptions.SecureServingOptions) (*server.SecureServingInfo, error) {
	if err := opts.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{net.ParseIP("127.0.0.1")}); err != nil {
		return nil, fmt.Errorf("self-signed certificate: %w", err)
	}
	var info *server.SecureServingInfo
	if err := opts.ApplyTo(&info); err != nil {
		return nil, err
	}
	return info, nil
}
