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

// DefaultBindAddress is where accord-console serves by default (the Service's target port).
const DefaultBindAddress = "0.0.0.0:8080"

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
	// Base: the logging flags, --feature-gates and --version.
	component.Base
}

// NewCommandOptions returns the defaults.
func NewCommandOptions() *CommandOptions {
	return &CommandOptions{BindAddress: DefaultBindAddress, Base: component.NewBase(nil),
		Authentication: "auto", ExplainInterval: 30 * time.Second,
		Explain: DefaultExplainAttributes()}
}

// Flags returns the named flag sets.
func (o *CommandOptions) Flags() cliflag.NamedFlagSets {
	var fss cliflag.NamedFlagSets
	fs := fss.FlagSet("console")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Kubeconfig file; empty uses the in-cluster configuration.")
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "host:port the page, /healthz and /readyz are served on.")
	fs.StringVar(&o.PolicyConfigFile, "policy-config-file", o.PolicyConfigFile, "DeschedulerPolicy (descheduler/v1alpha2) the explain view runs in dry-run mode, and whose LowNodeLoad highThresholds the node grid shows; empty turns explain off.")
	fs.StringVar(&o.SchedulerConfigFile, "scheduler-config-file", o.SchedulerConfigFile, "KubeSchedulerConfiguration accord-scheduler runs, for explain's SchedulerSimulation.")
	fs.BoolVar(&o.Playground, "playground", o.Playground, "Serve the playground's write controls (toggle a node's CR resource, set a node's simulated load). Only for a playground.")
	afs := fss.FlagSet("authentication")
	afs.StringVar(&o.Authentication, "authentication", o.Authentication, "Who may use the console: token requires a bearer token the apiserver accepts (TokenReview; from the login page's cookie or an Authorization header, as kubectl proxy or an OIDC proxy sends it) and shows each user what the user may list (SubjectAccessReviews: the whole cluster with list on pods, nodes, Events, ClusterScopedResources and NodeMetrics cluster-wide, else the pods of the namespaces where the user may list pods); none serves everyone who reaches --bind-address; auto is token in a cluster (no --kubeconfig) and none with --kubeconfig.")
	afs.StringVar(&o.Explain.Verb, "explain-verb", o.Explain.Verb, "With token authentication, explain needs this verb on --explain-group/--explain-resource (the chart's ClusterRole <fullname>-console-explain grants it).")
	afs.StringVar(&o.Explain.Group, "explain-group", o.Explain.Group, "API group of the explain permission (no API serves it; RBAC authorises it all the same).")
	afs.StringVar(&o.Explain.Resource, "explain-resource", o.Explain.Resource, "Resource of the explain permission.")
	afs.DurationVar(&o.ExplainInterval, "explain-interval", o.ExplainInterval, "With token authentication, one user may start explain once per this interval (429 with Retry-After sooner); 0: no limit. One explain runs at a time in any case.")
	o.Base.AddFlags(&fss)
	return fss
}

// Validate checks the options.
func (o *CommandOptions) Validate() error {
	if o.BindAddress == "" {
		return errors.New("--bind-address: required")
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
	opts := Options{RestConfig: restCfg, BindAddress: o.BindAddress, PolicyConfigFile: o.PolicyConfigFile, SchedulerConfigFile: o.SchedulerConfigFile}
	if o.Authentication == "token" || (o.Authentication == "auto" && o.Kubeconfig == "") {
		kube, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(restCfg), "accord-console"))
		if err != nil {
			return err
		}
		opts.Access = NewAccess(kube, AccessOptions{Explain: o.Explain, ExplainInterval: o.ExplainInterval})
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
