// Package playground is what `make run` starts: a local Accord cluster in one process. It brings up
// the control plane of pkg/demo/localcluster (etcd, kube-apiserver, workload controllers, node simulator),
// creates the sample nodes and ClusterScopedResources from manifests/samples, serves a simulated
// metrics.k8s.io (usage = a per-node baseline + the pods' requests) through the apiserver, runs
// accord-metrics-reporter on it to keep the NodeMetrics fresh, and writes a kubeconfig for kubectl.
package playground

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/manifests"
	"github.com/accord-sched/accord/pkg/console"
	"github.com/accord-sched/accord/pkg/demo/localcluster"
	"github.com/accord-sched/accord/pkg/demo/metricsapisim"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
	schedserver "github.com/accord-sched/accord/pkg/scheduler/server"
)

// SampleFiles are the files of manifests/samples the playground applies before its schedulers start.
var SampleFiles = []string{"samples/nodes.yaml", "samples/clusterscopedresources.yaml"}

// WorkloadFiles are the sample workloads applied once accord-scheduler runs.
var WorkloadFiles = []string{"samples/workload.yaml"}

// Options configure a playground.
type Options struct {
	// Dir receives the kubeconfig and the generated configs. Default: .playground in the working dir.
	Dir string
	// WithoutScheduler leaves accord-scheduler (and so the sample workloads) out.
	WithoutScheduler bool
	// WithoutDescheduler leaves accord-descheduler out.
	WithoutDescheduler bool
	// DeschedulingInterval is the descheduler's periodic interval (it also runs event-driven).
	// Default 10s.
	DeschedulingInterval time.Duration
	// WithoutConsole leaves accord-console out.
	WithoutConsole bool
	// ConsoleAddress is where accord-console serves (host:port; port 0 picks one). Default
	// 127.0.0.1:0; `make run` uses DefaultConsoleAddress.
	ConsoleAddress string
}

// DefaultConsoleAddress is where `make run` serves the console: loopback only, since its playground
// controls write to the cluster.
const DefaultConsoleAddress = "127.0.0.1:8090"

// Playground is a running local cluster.
type Playground struct {
	Env *localcluster.Cluster
	// Kubeconfig is the path of the admin kubeconfig.
	Kubeconfig string
	// Nodes are the names of the sample nodes.
	Nodes []string
	// SchedulerConfig is the path of the KubeSchedulerConfiguration accord-scheduler runs with.
	SchedulerConfig string
	// DeschedulerPolicy is the path of the DeschedulerPolicy accord-descheduler runs with.
	DeschedulerPolicy string
	// MetricsReporterConfig is the path of the MetricsReporterConfiguration accord-metrics-reporter
	// runs with.
	MetricsReporterConfig string
	// ConsoleURL is the page of accord-console ("" without it).
	ConsoleURL string
	// WhatIfFile is node-5's ClusterScopedResource as the banner's change leaves it (example.com/memory
	// no longer offered), for `kubectl accord what-if` ("" without the descheduler).
	WhatIfFile string

	cancel     context.CancelFunc
	wg         sync.WaitGroup
	metricsAPI *metricsapisim.Server
	// errs receives the error of a component that stopped before the playground did.
	errs chan error
}

// Start brings the playground up and returns once the sample nodes are Ready and the sample CRs exist.
func Start(ctx context.Context, opts Options) (_ *Playground, err error) {
	logger := klog.FromContext(ctx)
	if opts.Dir == "" {
		opts.Dir = ".playground"
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}

	start := time.Now()
	env, err := localcluster.Start(ctx, localcluster.Options{})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &Playground{
		Env:                   env,
		Kubeconfig:            filepath.Join(dir, "kubeconfig"),
		SchedulerConfig:       filepath.Join(dir, "scheduler-config.yaml"),
		DeschedulerPolicy:     filepath.Join(dir, "descheduler-policy.yaml"),
		MetricsReporterConfig: filepath.Join(dir, "metrics-reporter-config.yaml"),
		cancel:                cancel,
		errs:                  make(chan error, 4),
	}
	defer func() {
		if err != nil {
			p.Stop()
		}
	}()
	logger.Info("Control plane is up", "apiserver", env.Config.Host, "took", time.Since(start).Round(time.Millisecond))
	if err := env.WriteKubeconfig(p.Kubeconfig); err != nil {
		return nil, fmt.Errorf("writing kubeconfig: %w", err)
	}

	objs, err := DecodeSamples(manifests.Samples, SampleFiles...)
	if err != nil {
		return nil, err
	}
	for _, obj := range objs {
		if err := p.create(ctx, obj); err != nil {
			return nil, err
		}
	}
	if err := env.Nodes.WaitForNodesReady(ctx, p.Nodes...); err != nil {
		return nil, err
	}
	logger.Info("Sample nodes are Ready", "nodes", p.Nodes)

	if err := p.startMetrics(ctx); err != nil {
		return nil, err
	}
	if err := watchPods(ctx, env, &p.wg); err != nil {
		return nil, err
	}

	if opts.WithoutScheduler {
		return p, p.startConsole(ctx, opts, false)
	}
	schedCfg, err := SchedulerConfig()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.SchedulerConfig, schedCfg, 0o644); err != nil {
		return nil, err
	}
	p.run(ctx, "accord-scheduler", func(ctx context.Context) error {
		return schedserver.RunInProcess(ctx, p.Kubeconfig, p.SchedulerConfig)
	})
	logger.Info("accord-scheduler is running", "config", p.SchedulerConfig)
	workloads, err := DecodeSamples(manifests.Samples, WorkloadFiles...)
	if err != nil {
		return nil, err
	}
	for _, obj := range workloads {
		if err := p.create(ctx, obj); err != nil {
			return nil, err
		}
	}

	if opts.WithoutDescheduler {
		return p, p.startConsole(ctx, opts, false)
	}
	if opts.DeschedulingInterval == 0 {
		opts.DeschedulingInterval = 10 * time.Second
	}
	if err := os.WriteFile(p.DeschedulerPolicy, manifests.DeschedulerPlaygroundPolicy, 0o644); err != nil {
		return nil, err
	}
	if err := p.writeWhatIfFile(objs, filepath.Join(dir, "node-5-without-memory.yaml")); err != nil {
		return nil, err
	}
	ready := make(chan struct{})
	p.run(ctx, "accord-descheduler", func(ctx context.Context) error {
		return runner.Run(ctx, runner.Config{
			Kubeconfig:           p.Kubeconfig,
			PolicyConfigFile:     p.DeschedulerPolicy,
			SchedulerConfigFile:  p.SchedulerConfig,
			DeschedulingInterval: opts.DeschedulingInterval,
			EventDriven:          true,
			OnReady:              func() { close(ready) },
		})
	})
	select {
	case <-ready:
	case err := <-p.errs:
		return nil, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	logger.Info("accord-descheduler is running", "policy", p.DeschedulerPolicy, "interval", opts.DeschedulingInterval, "eventDriven", true)
	return p, p.startConsole(ctx, opts, true)
}

// startConsole runs accord-console in-process with the playground's controls (writing through the
// admin kubeconfig); explain runs the descheduler's policy when the descheduler runs.
func (p *Playground) startConsole(ctx context.Context, opts Options, explain bool) error {
	if opts.WithoutConsole {
		return nil
	}
	if opts.ConsoleAddress == "" {
		opts.ConsoleAddress = "127.0.0.1:0"
	}
	controls, err := console.NewClientControls(p.Env.Config)
	if err != nil {
		return err
	}
	// Unauthenticated, as a local --kubeconfig run: the console answers only Host headers of
	// localhost, 127.0.0.1 and [::1] (DNS rebinding cannot reach the write controls), and serves plain
	// HTTP on a loopback address (HTTPS with a self-signed certificate on another).
	co := console.Options{RestConfig: p.Env.Config, BindAddress: opts.ConsoleAddress, Controls: controls, PlainHTTP: loopback(opts.ConsoleAddress)}
	if explain {
		co.PolicyConfigFile, co.SchedulerConfigFile = p.DeschedulerPolicy, p.SchedulerConfig
	}
	srv, err := console.New(ctx, co)
	if err != nil {
		return fmt.Errorf("accord-console: %w", err)
	}
	p.ConsoleURL = srv.URL()
	p.run(ctx, "accord-console", srv.Serve)
	klog.FromContext(ctx).Info("accord-console is running", "url", p.ConsoleURL)
	return nil
}

// loopback reports whether the host of addr (host:port) is a loopback address or localhost.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

// run runs a component until ctx ends; an early exit is reported on p.errs.
func (p *Playground) run(ctx context.Context, name string, f func(ctx context.Context) error) {
	p.wg.Go(func() {
		err := f(ctx)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("stopped")
		}
		p.errs <- fmt.Errorf("%s: %w", name, err)
	})
}

// Err returns a channel that receives the error of a component that stopped on its own.
func (p *Playground) Err() <-chan error { return p.errs }

// create creates one sample object. Nodes are added to the node simulator.
func (p *Playground) create(ctx context.Context, obj runtime.Object) error {
	var err error
	var kind, name string
	switch o := obj.(type) {
	case *corev1.Node:
		kind, name = "Node", o.Name
		_, err = p.Env.Nodes.AddNode(ctx, o)
		p.Nodes = append(p.Nodes, o.Name)
	case *schedv1alpha1.ClusterScopedResource:
		kind, name = "ClusterScopedResource", o.Name
		_, err = p.Env.Accord.SchedulingV1alpha1().ClusterScopedResources().Create(ctx, o, metav1.CreateOptions{})
	case *corev1.Namespace:
		kind, name = "Namespace", o.Name
		_, err = p.Env.Client.CoreV1().Namespaces().Create(ctx, o, metav1.CreateOptions{})
	case *appsv1.Deployment:
		kind, name = "Deployment", o.Namespace+"/"+o.Name
		_, err = p.Env.Client.AppsV1().Deployments(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	default:
		return fmt.Errorf("the playground does not know how to create a %T", obj)
	}
	if apierrors.IsAlreadyExists(err) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("creating %s %s: %w", kind, name, err)
	}
	klog.FromContext(ctx).V(2).Info("Created sample object", "kind", kind, "name", name)
	return nil
}

// Stop tears the playground down.
func (p *Playground) Stop() {
	p.cancel()
	p.wg.Wait()
	if p.metricsAPI != nil {
		p.metricsAPI.Close()
	}
	p.Env.Stop()
}

// Run starts the playground, tells the user how to reach it, and runs until ctx ends.
func Run(ctx context.Context, opts Options) error {
	p, err := Start(ctx, opts)
	if err != nil {
		return err
	}
	defer p.Stop()
	fmt.Print(p.Banner())
	select {
	case <-ctx.Done():
		klog.FromContext(ctx).Info("Shutting down the playground")
		return nil
	case err := <-p.Err():
		return err
	}
}

// WhatIfExample is the banner's `kubectl accord` example, the command line after the binary: the
// evictions the descheduler would make once node-5 stops offering example.com/memory, and where the
// replacements would land, before the change is made.
func (p *Playground) WhatIfExample() []string {
	return []string{"--kubeconfig", p.Kubeconfig, "what-if", "-f", p.WhatIfFile, "--policy", p.DeschedulerPolicy,
		"--scheduler-config", p.SchedulerConfig}
}

// Banner is what Run prints once the playground is up: how to reach it and what to try.
func (p *Playground) Banner() string {
	return fmt.Sprintf(`
Accord playground is running.

  Console: %s
  (click a resource of a node to toggle it in its ClusterScopedResource, e.g. example.com/memory on
  node-5, and watch the descheduler move its pods; set a node's simulated load under its card)

  export KUBECONFIG=%s
  bin/kubectl get nodes,csres,nodemetrics
  bin/kubectl get pods -n demo -o wide

accord-scheduler runs with %s,
accord-descheduler with %s,
accord-metrics-reporter with %s:
it writes the NodeMetrics from metrics.k8s.io, which a simulated metrics server serves
(usage = the node's sim.accord.dev/baseline-usage annotation + its running pods' requests).
Make node-3 cool (it starts at 95%% CPU) and watch its NodeMetric follow within seconds:
  bin/kubectl annotate node node-3 --overwrite sim.accord.dev/baseline-usage='{"cpu":"1","memory":"4Gi"}'
  bin/kubectl get nodemetric node-3 -o jsonpath='{.status.nodeUsage}'
Preview what the descheduler would do if node-5 stopped offering example.com/memory (nothing is written):
  bin/kubectl-accord %s
Make node-5 stop offering example.com/memory and watch its pods move to node-2:
  bin/kubectl patch csres node-5 --type=merge -p '{"spec":{"resourcesFilter":{"example.com/memory":false}}}'
Ask the descheduler why it would (not) evict each candidate pod (one dry-run cycle):
  bin/accord-descheduler explain --kubeconfig %s \
    --policy-config-file %s --scheduler-config-file %s
%s
Press Ctrl-C to stop.
`, p.ConsoleURL, p.Kubeconfig, p.SchedulerConfig, p.DeschedulerPolicy, p.MetricsReporterConfig, strings.Join(p.WhatIfExample(), " "), p.Kubeconfig, p.DeschedulerPolicy, p.SchedulerConfig, migrationHowTo)
}

// writeWhatIfFile writes node-5's sample ClusterScopedResource (from the sample objects) with
// example.com/memory turned off to path, as p.WhatIfFile.
func (p *Playground) writeWhatIfFile(samples []runtime.Object, path string) error {
	for _, obj := range samples {
		cr, ok := obj.(*schedv1alpha1.ClusterScopedResource)
		if !ok || cr.Name != "node-5" {
			continue
		}
		cr = cr.DeepCopy()
		cr.APIVersion, cr.Kind = schedv1alpha1.SchemeGroupVersion.String(), "ClusterScopedResource"
		cr.Spec.ResourcesFilter["example.com/memory"] = false
		data, err := yaml.Marshal(cr)
		if err != nil {
			return err
		}
		p.WhatIfFile = path
		return os.WriteFile(path, data, 0o644)
	}
	return errors.New("the samples have no ClusterScopedResource node-5 for the what-if example")
}
