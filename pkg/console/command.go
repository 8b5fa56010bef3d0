package console

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/pkg/component"
	accordclient "github.com/accord-sched/accord/pkg/generated/clientset/versioned"
)

// Where accord-console serves by default: every address with token authentication (the Service's
// target port), the loopback one without.
const (
	DefaultBindAddress         = "0.0.0.0:8080"
	DefaultLoopbackBindAddress = "127.0.0.1:8080"
)

// CommandOptions are accord-console's command line.
type CommandOptions struct {
	Kubeconfig          string
	BindAddress         string
	PolicyConfigFile    string
	SchedulerConfigFile string
	// Playground serves the write controls (ClientControls through --kubeconfig): only for a
	// playground, never in a cluster (the shipped RBAC is read-only and would refuse them anyway).
	Playground bool
	// Authentication is auto, token or none (see Flags).
	Authentication string
	// Explain is the permission explain needs; ExplainInterval limits each user's explain runs.
	Explain         authorizationv1.ResourceAttributes
	ExplainInterval time.Duration
	// TLSCertFile and TLSPrivateKeyFile: the serving certificate (self-signed in memory without).
	TLSCertFile, TLSPrivateKeyFile string
	// Access: the token audience, sessions, failed-login limit and per-session streams.
	Access AccessOptions
	// MaxStreams bounds the open streams; AllowedHosts are the Host headers answered without
	// authentication.
	MaxStreams   int
	AllowedHosts []string
	// ReviewQPS and ReviewBurst are the TokenReview/SubjectAccessReview client's rate limit.
	ReviewQPS   float32
	ReviewBurst int
	// Base: the logging flags, --feature-gates and --version.
	component.Base
}

// NewCommandOptions returns the defaults.
func NewCommandOptions() *CommandOptions {
	o := &CommandOptions{Base: component.NewBase(nil),
		Authentication: "auto", ExplainInterval: 30 * time.Second,
		Explain: DefaultExplainAttributes(), MaxStreams: DefaultMaxStreams, ReviewQPS: 20, ReviewBurst: 40}
	o.Access.defaults()
	return o
}

// token reports whether the options ask for token authentication.
func (o *CommandOptions) token() bool {
	return o.Authentication == "token" || (o.Authentication == "auto" && o.Kubeconfig == "")
}

// Flags returns the named flag sets.
func (o *CommandOptions) Flags() cliflag.NamedFlagSets {
	var fss cliflag.NamedFlagSets
	fs := fss.FlagSet("console")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Kubeconfig file; empty uses the in-cluster configuration.")
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "host:port the page, /healthz and /readyz are served on (HTTPS); empty: "+DefaultBindAddress+" with token authentication, "+DefaultLoopbackBindAddress+" (loopback only) without.")
	fs.StringVar(&o.TLSCertFile, "tls-cert-file", o.TLSCertFile, "PEM serving certificate (with its intermediates); without it and --tls-private-key-file the console serves a self-signed certificate for localhost, generated in memory at start.")
	fs.StringVar(&o.TLSPrivateKeyFile, "tls-private-key-file", o.TLSPrivateKeyFile, "PEM private key of --tls-cert-file.")
	fs.IntVar(&o.MaxStreams, "max-streams", o.MaxStreams, "Most live-update streams (/api/stream) open at once, over all users (429 beyond).")
	fs.StringSliceVar(&o.AllowedHosts, "allowed-hosts", o.AllowedHosts, "With authentication none: the Host headers (host:port) answered, against DNS rebinding (421 otherwise; the probes answer any); empty: localhost, 127.0.0.1 and [::1] with the bound port. Name the address users reach when binding another.")
	fs.StringVar(&o.PolicyConfigFile, "policy-config-file", o.PolicyConfigFile, "DeschedulerPolicy (descheduler/v1alpha2) the explain view runs in dry-run mode, and whose LowNodeLoad highThresholds the node grid shows; empty turns explain off.")
	fs.StringVar(&o.SchedulerConfigFile, "scheduler-config-file", o.SchedulerConfigFile, "KubeSchedulerConfiguration accord-scheduler runs, for explain's SchedulerSimulation.")
	fs.BoolVar(&o.Playground, "playground", o.Playground, "Serve the playground's write controls (toggle a node's CR resource, set a node's simulated load). Only for a playground.")
	afs := fss.FlagSet("authentication")
	afs.StringVar(&o.Authentication, "authentication", o.Authentication, "Who may use the console: token requires a bearer token the apiserver accepts (TokenReview; from the login page's cookie or an Authorization header, as kubectl proxy or an OIDC proxy sends it) and shows each user what the user may list (SubjectAccessReviews: the whole cluster with list on pods, nodes, Events, ClusterScopedResources and NodeMetrics cluster-wide, else the pods of the namespaces where the user may list pods); none serves everyone who reaches --bind-address; auto is token in a cluster (no --kubeconfig) and none with --kubeconfig.")
	afs.StringVar(&o.Explain.Verb, "explain-verb", o.Explain.Verb, "With token authentication, explain needs this verb on --explain-group/--explain-resource (the chart's ClusterRole <fullname>-console-explain grants it).")
	afs.StringVar(&o.Explain.Group, "explain-group", o.Explain.Group, "API group of the explain permission (no API serves it; RBAC authorises it all the same).")
	afs.StringVar(&o.Explain.Resource, "explain-resource", o.Explain.Resource, "Resource of the explain permission.")
	afs.DurationVar(&o.ExplainInterval, "explain-interval", o.ExplainInterval, "With token authentication, one user may start explain once per this interval (429 with Retry-After sooner); 0: no limit. One explain runs at a time in any case.")
	afs.StringVar(&o.Access.Audience, "token-audience", o.Access.Audience, "With token authentication, the audience a token must be minted for (kubectl create token SA --audience "+DefaultTokenAudience+"); the TokenReviews ask for it, so the apiserver's own tokens and pods' default tokens are refused.")
	afs.DurationVar(&o.Access.SessionMaxAge, "session-max-age", o.Access.SessionMaxAge, "A login's session ends this long after it (and once its token stops authenticating).")
	afs.DurationVar(&o.Access.SessionIdleTimeout, "session-idle-timeout", o.Access.SessionIdleTimeout, "A session ends after this long without a request (an open stream counts as use).")
	afs.IntVar(&o.Access.MaxSessions, "max-sessions", o.Access.MaxSessions, "Most sessions held (the tokens stay on the server); a login beyond it ends the session idle longest.")
	afs.IntVar(&o.Access.FailedLogins, "failed-logins", o.Access.FailedLogins, "Refused tokens (login form or Authorization header) one client address may send in a burst; beyond, 429 with Retry-After and no TokenReview.")
	afs.DurationVar(&o.Access.FailedLoginInterval, "failed-login-interval", o.Access.FailedLoginInterval, "One more refused token is allowed per client address per this interval.")
	afs.IntVar(&o.Access.MaxStreamsPerSession, "max-streams-per-session", o.Access.MaxStreamsPerSession, "Most streams one session (or one bearer token) may have open.")
	afs.Float32Var(&o.ReviewQPS, "review-qps", o.ReviewQPS, "Queries per second of the client that sends the TokenReviews and SubjectAccessReviews (its own, apart from the informers').")
	afs.IntVar(&o.ReviewBurst, "review-burst", o.ReviewBurst, "Burst of the review client.")
	o.Base.AddFlags(&fss)
	return fss
}

// Validate checks the options.
func (o *CommandOptions) Validate() error {
	if (o.TLSCertFile == "") != (o.TLSPrivateKeyFile == "") {
		return errors.New("--tls-cert-file, --tls-private-key-file: give both or neither")
	}
	if o.MaxStreams <= 0 {
		return errors.New("--max-streams: must be positive")
	}
	if o.SchedulerConfigFile != "" && o.PolicyConfigFile == "" {
		return errors.New("--scheduler-config-file: needs --policy-config-file (it is for explain)")
	}
	switch o.Authentication {
	case "auto", "token", "none":
	default:
		return fmt.Errorf("--authentication: %q: want auto, token or none", o.Authentication)
	}
	if o.Explain.Verb == "" || o.Explain.Resource == "" {
		return errors.New("--explain-verb, --explain-resource: required")
	}
	if o.ExplainInterval < 0 {
		return errors.New("--explain-interval: must not be negative")
	}
	if o.token() {
		if len(o.AllowedHosts) > 0 {
			return errors.New("--allowed-hosts: only with authentication none (a token-authenticated console's session cookie is its own host's)")
		}
		switch {
		case o.Access.Audience == "":
			return errors.New("--token-audience: required")
		case o.Access.SessionMaxAge <= 0 || o.Access.SessionIdleTimeout <= 0:
			return errors.New("--session-max-age, --session-idle-timeout: must be positive")
		case o.Access.MaxSessions <= 0:
			return errors.New("--max-sessions: must be positive")
		case o.Access.FailedLogins <= 0 || o.Access.FailedLoginInterval <= 0:
			return errors.New("--failed-logins, --failed-login-interval: must be positive")
		case o.Access.MaxStreamsPerSession <= 0:
			return errors.New("--max-streams-per-session: must be positive")
		case o.ReviewQPS <= 0 || o.ReviewBurst <= 0:
			return errors.New("--review-qps, --review-burst: must be positive")
		}
	}
	return nil
}

// NewCommand returns the accord-console command.
func NewCommand() *cobra.Command {
	o := NewCommandOptions()
	return component.NewCommand(component.Command{
		Use:   "accord-console",
		Short: "A live web console of an Accord cluster",
		Long: `accord-console serves one page showing the cluster live: the nodes with their ClusterScopedResource
and NodeMetric (against the LoadAware thresholds), pending pods with the scheduler's reason, the
descheduler's evictions and where the replacements landed, and explain (a dry-run descheduling cycle).
It only reads the cluster, unless --playground is given.`,
		Base:     o.Base,
		Flags:    o.Flags(),
		Validate: o.Validate,
		Run:      o.Run,
	})
}

// Run serves the console until ctx ends.
func (o *CommandOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, _ = component.Starting(klog.NewContext(ctx, klog.Background()), "accord-console")
	restCfg, err := component.RestConfig(o.Kubeconfig, 0, 0)
	if err != nil {
		return err
	}
	opts := Options{RestConfig: restCfg, BindAddress: o.BindAddress, PolicyConfigFile: o.PolicyConfigFile, SchedulerConfigFile: o.SchedulerConfigFile,
		TLSCertFile: o.TLSCertFile, TLSPrivateKeyFile: o.TLSPrivateKeyFile, MaxStreams: o.MaxStreams}
	if o.token() {
		if opts.BindAddress == "" {
			opts.BindAddress = DefaultBindAddress
		}
		// The reviews have their own client and rate limit: a flood of tokens does not delay the
		// informers, and is bounded apart from them.
		reviewCfg := rest.AddUserAgent(rest.CopyConfig(restCfg), "accord-console-reviews")
		reviewCfg.QPS, reviewCfg.Burst, reviewCfg.RateLimiter = o.ReviewQPS, o.ReviewBurst, nil
		kube, err := kubernetes.NewForConfig(reviewCfg)
		if err != nil {
			return err
		}
		access := o.Access
		access.Explain, access.ExplainInterval = o.Explain, o.ExplainInterval
		opts.Access = NewAccess(kube, access)
	} else {
		if opts.BindAddress == "" {
			opts.BindAddress = DefaultLoopbackBindAddress
		}
		opts.AllowedHosts = o.AllowedHosts
	}
	if o.Playground {
		if opts.Controls, err = NewClientControls(restCfg); err != nil {
			return err
		}
	}
	s, err := New(ctx, opts)
	if err != nil {
		return err
	}
	return s.Serve(ctx)
}

// NewClientControls returns ClientControls writing with restCfg.
func NewClientControls(restCfg *rest.Config) (ClientControls, error) {
	restCfg = rest.AddUserAgent(rest.CopyConfig(restCfg), "accord-console")
	kube, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return ClientControls{}, err
	}
	crCfg := rest.CopyConfig(restCfg)
	crCfg.ContentType, crCfg.AcceptContentTypes = "application/json", "application/json"
	accord, err := accordclient.NewForConfig(crCfg)
	if err != nil {
		return ClientControls{}, err
	}
	return ClientControls{Kube: kube, Accord: accord}, nil
}
