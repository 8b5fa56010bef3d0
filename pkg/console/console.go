// Package console is accord-console: a read-only web console of an Accord cluster. It reads the
// cluster through one set of shared informers (core nodes, pods and Events; Accord's
// ClusterScopedResources and NodeMetrics) and serves one embedded page, kept live with server-sent
// events, each page getting only the view it shows (its query: filters and page; see cut): what
// needs attention first, then the paged node grid (CR resources and scores, NodeMetric usage against the LoadAware thresholds,
// taints, pods), pending pods with the scheduler's reason, the timeline of the descheduler's
// evictions and where the replacements landed, and explain (the descheduler's own dry-run cycle).
// In playground mode it also serves write controls (Controls).
package console

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiserveroptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/pkg/component"
	"github.com/accord-sched/accord/pkg/crdcheck"
	"github.com/accord-sched/accord/pkg/descheduler/explain"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
	accordclient "github.com/accord-sched/accord/pkg/generated/clientset/versioned"
	accordinformers "github.com/accord-sched/accord/pkg/generated/informers/externalversions"
)

// Options configure a console.
type Options struct {
	// RestConfig reaches the cluster; when nil, Kubeconfig is read (empty: in-cluster).
	RestConfig *rest.Config
	Kubeconfig string
	// BindAddress is host:port to serve on (port 0 picks one).
	BindAddress string
	// PolicyConfigFile is the DeschedulerPolicy explain runs; empty turns explain off. It also
	// gives the node grid its thresholds (LowNodeLoad's highThresholds are LoadAware's
	// usageThresholds).
	PolicyConfigFile string
	// SchedulerConfigFile is accord-scheduler's configuration, for explain's SchedulerSimulation.
	SchedulerConfigFile string
	// Controls, when set, turns on playground mode: the write endpoints exist.
	Controls Controls
	// CacheSyncTimeout bounds the wait for the informers; crdcheck.DefaultSyncTimeout when zero.
	CacheSyncTimeout time.Duration
	// Access, when set, requires every user to authenticate (TokenReview) and be authorised
	// (SubjectAccessReview); nil serves everyone who reaches BindAddress whose Host header is one
	// of AllowedHosts.
	Access *Access
	// TLSCertFile and TLSPrivateKeyFile are the serving certificate; without them the console
	// serves a self-signed one for localhost, generated in memory (component.SecureServingInfo).
	TLSCertFile, TLSPrivateKeyFile string
	// PlainHTTP serves HTTP without TLS: only without Access and on a loopback BindAddress (the
	// in-process playground).
	PlainHTTP bool
	// AllowedHosts are the Host headers answered without Access (host:port, as browsers send them);
	// empty: localhost, 127.0.0.1 and [::1] with the bound port. The probes answer any Host.
	AllowedHosts []string
	// MaxStreams bounds the open /api/stream; DefaultMaxStreams when zero.
	MaxStreams int
}

// DefaultMaxStreams bounds the open streams of a console.
const DefaultMaxStreams = 100

// Server is a console bound to its address, ready to Serve.
type Server struct {
	opts     Options
	listener net.Listener
	handler  *handler
	kf       informers.SharedInformerFactory
	af       accordinformers.SharedInformerFactory
	changes  chan struct{}
}

// New builds the clients and informers, and binds the address.
func New(ctx context.Context, opts Options) (*Server, error) {
	logger := klog.FromContext(ctx).WithName("console")
	restCfg := opts.RestConfig
	if restCfg == nil {
		var err error
		if restCfg, err = clientcmd.BuildConfigFromFlags("", opts.Kubeconfig); err != nil {
			return nil, fmt.Errorf("--kubeconfig: %w", err)
		}
	}
	restCfg = rest.AddUserAgent(rest.CopyConfig(restCfg), "accord-console")
	kube, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, err
	}
	crCfg := rest.CopyConfig(restCfg)
	crCfg.ContentType, crCfg.AcceptContentTypes = "application/json", "application/json"
	accord, err := accordclient.NewForConfig(crCfg)
	if err != nil {
		return nil, err
	}
	th, err := LoadThresholds(opts.PolicyConfigFile, opts.SchedulerConfigFile)
	if err != nil {
		return nil, err
	}

	s := &Server{opts: opts, changes: make(chan struct{}, 1),
		kf: informers.NewSharedInformerFactory(kube, 0), af: accordinformers.NewSharedInformerFactory(accord, 0)}
	st := newState()
	st.thresholds, st.playground = th, opts.Controls != nil
	nodes, pods, events := s.kf.Core().V1().Nodes(), s.kf.Core().V1().Pods(), s.kf.Core().V1().Events()
	csrs, nms := s.af.Scheduling().V1alpha1().ClusterScopedResources(), s.af.Slo().V1alpha1().NodeMetrics()
	if err := events.Informer().AddIndexers(eventIndexers()); err != nil {
		return nil, err
	}
	st.nodes, st.pods, st.events = nodes.Lister(), pods.Lister(), events.Informer().GetIndexer()
	st.csrs, st.metrics = csrs.Lister(), nms.Lister()
	informers := []cache.SharedIndexInformer{nodes.Informer(), events.Informer(), csrs.Informer(), nms.Informer()}
	// PodMigrations are optional: a cluster whose Accord CRDs predate them still gets the console.
	served, err := crdcheck.Discover(kube.Discovery(), crdcheck.PodMigrations())
	if err != nil {
		return nil, fmt.Errorf("discovering %s: %w", crdcheck.PodMigrations(), err)
	}
	if served.Serves(crdcheck.PodMigrations()) {
		pm := s.af.Scheduling().V1alpha1().PodMigrations()
		st.migrations = pm.Lister()
		informers = append(informers, pm.Informer())
	} else {
		logger.Info("The cluster does not serve the PodMigration CRD; the console shows no migrations", "crd", crdcheck.PodMigrations().Name())
	}
	changed := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.changed() },
		UpdateFunc: func(any, any) { s.changed() },
		DeleteFunc: func(any) { s.changed() },
	}
	podHandler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { st.podSeen(obj); s.changed() },
		UpdateFunc: func(_, obj any) { st.podSeen(obj); s.changed() },
		DeleteFunc: func(obj any) { st.podGone(obj); s.changed() },
	}
	if _, err := pods.Informer().AddEventHandler(podHandler); err != nil {
		return nil, err
	}
	for _, inf := range informers {
		if _, err := inf.AddEventHandler(changed); err != nil {
			return nil, err
		}
	}

	if opts.MaxStreams == 0 {
		opts.MaxStreams = DefaultMaxStreams
	}
	h := &handler{logger: logger, state: st, hub: newHub(), controls: opts.Controls, explain: explain.Run, access: opts.Access, maxStreams: opts.MaxStreams,
		explainCfg: runner.Config{RestConfig: restCfg, PolicyConfigFile: opts.PolicyConfigFile, SchedulerConfigFile: opts.SchedulerConfigFile}}
	h.setNotReady("the informer caches have not started")
	s.handler = h
	if s.listener, err = net.Listen("tcp", opts.BindAddress); err != nil {
		return nil, fmt.Errorf("--bind-address: %w", err)
	}
	addr := s.listener.Addr().(*net.TCPAddr)
	if opts.PlainHTTP && (opts.Access != nil || !addr.IP.IsLoopback()) {
		_ = s.listener.Close()
		return nil, fmt.Errorf("plain HTTP is only for a console without authentication on a loopback address, not %s", addr)
	}
	if opts.Access == nil {
		h.allowedHosts = opts.AllowedHosts
		if len(h.allowedHosts) == 0 {
			for _, host := range []string{"localhost", "127.0.0.1", "::1"} {
				h.allowedHosts = append(h.allowedHosts, net.JoinHostPort(host, fmt.Sprint(addr.Port)))
			}
		}
	}
	return s, nil
}

// URL is where the page is served.
func (s *Server) URL() string {
	addr := s.listener.Addr().(*net.TCPAddr)
	host := addr.IP.String()
	if addr.IP.IsUnspecified() {
		host = "localhost"
	}
	scheme := "https://"
	if s.opts.PlainHTTP {
		scheme = "http://"
	}
	return scheme + net.JoinHostPort(host, fmt.Sprint(addr.Port))
}

func (s *Server) changed() {
	select {
	case s.changes <- struct{}{}:
	default:
	}
}

// Serve serves until ctx ends: the HTTP server at once (/readyz fails until the caches sync, with
// the reason), then the informers and the publisher of live updates.
func (s *Server) Serve(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("console")
	serving, stopServing := context.WithCancel(ctx)
	defer stopServing()
	stopped, err := s.serveHTTP(serving)
	if err != nil {
		_ = s.listener.Close()
		return err
	}
	logger.Info("Serving the console", "url", s.URL(), "playground", s.opts.Controls != nil, "explain", s.opts.PolicyConfigFile != "", "authentication", s.opts.Access != nil, "allowedHosts", s.handler.allowedHosts)

	s.kf.Start(ctx.Done())
	s.af.Start(ctx.Done())
	defer s.kf.Shutdown()
	defer s.af.Shutdown()
	err = crdcheck.WaitForSync(ctx, crdcheck.SyncOptions{Timeout: s.opts.CacheSyncTimeout, What: "console", OnWaiting: s.handler.setNotReady},
		[]crdcheck.Factory{s.kf, s.af})
	if err == nil {
		// The first snapshot before /readyz says ready, so /api/state answers as soon as it does.
		built := s.publish(logger)
		s.handler.setNotReady("")
		logger.Info("Console caches synced; the page is live")
		err = s.publishLoop(ctx, built)
	} else {
		s.handler.setNotReady(err.Error())
	}
	stopServing()
	if serr := <-stopped; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// serveHTTP serves the handler on the listener until ctx ends: with TLS through the secure ports'
// code (component.SecureServingInfo), or plain HTTP when PlainHTTP. A request's context ends with
// ctx, so that open streams let the server stop. The channel receives the server's end.
func (s *Server) serveHTTP(ctx context.Context) (<-chan error, error) {
	h := s.handler.mux()
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		defer context.AfterFunc(ctx, cancel)()
		h.ServeHTTP(w, r.WithContext(rctx))
	})
	stopped := make(chan error, 1)
	if s.opts.PlainHTTP {
		srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
		go func() { stopped <- srv.Serve(s.listener) }()
		context.AfterFunc(ctx, func() {
			shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(shutdownCtx)
		})
		return stopped, nil
	}
	opts := apiserveroptions.NewSecureServingOptions()
	opts.Listener, opts.BindAddress = s.listener, s.listener.Addr().(*net.TCPAddr).IP
	opts.ServerCert.CertDirectory, opts.ServerCert.PairName = "", ""
	opts.ServerCert.CertKey.CertFile, opts.ServerCert.CertKey.KeyFile = s.opts.TLSCertFile, s.opts.TLSPrivateKeyFile
	info, err := component.SecureServingInfo(opts)
	if err != nil {
		return nil, fmt.Errorf("serving TLS: %w", err)
	}
	done, _, err := info.Serve(handler, 5*time.Second, ctx.Done())
	if err != nil {
		return nil, err
	}
	go func() { <-done; stopped <- nil }()
	return stopped, nil
}

// publish rebuilds the snapshot and hands it to the subscribers; it returns how long the build took.
func (s *Server) publish(logger klog.Logger) time.Duration {
	start := time.Now()
	c := s.handler.state.snapshot(start)
	took := time.Since(start)
	s.handler.hub.publish(c)
	logger.V(4).Info("Published a snapshot", "nodes", len(c.nodes), "pending", len(c.pending), "took", took)
	return took
}

// publishLoop rebuilds the snapshot on changes (coalesced, publishDelay) and every refreshInterval,
// until ctx ends; built is how long the first one, which Serve published, took.
func (s *Server) publishLoop(ctx context.Context, built time.Duration) error {
	logger := klog.FromContext(ctx).WithName("console")
	tick := time.NewTicker(refreshInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.changes:
		case <-tick.C:
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(publishDelay(built)):
		}
		built = s.publish(logger)
	}
}

// podPhaseDone reports whether a pod has finished.
func podPhaseDone(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}
