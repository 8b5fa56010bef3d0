// Package playground is what `make run` starts: a local Accord cluster in one process. It brings up
// the harness control plane (etcd, kube-apiserver, workload controllers, node simulator), creates the
// sample nodes, ClusterScopedResources and NodeMetrics from manifests/samples, keeps the NodeMetrics
// fresh with a simulated reporter, and writes a kubeconfig for kubectl.
package playground

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	"github.com/accord-sched/accord/manifests"
	"github.com/accord-sched/accord/test/harness"
)

// SampleFiles are the files of manifests/samples the playground applies, in order.
var SampleFiles = []string{"samples/nodes.yaml", "samples/clusterscopedresources.yaml", "samples/nodemetrics.yaml"}

// Options configure a playground.
type Options struct {
	// Dir receives the kubeconfig and the generated configs. Default: .playground in the working dir.
	Dir string
	// ReportTick is how often the NodeMetric reporter looks for metrics due a report. Default 1s.
	ReportTick time.Duration
}

// Playground is a running local cluster.
type Playground struct {
	Env *harness.Env
	// Kubeconfig is the path of the admin kubeconfig.
	Kubeconfig string
	// Nodes are the names of the sample nodes.
	Nodes []string

	cancel context.CancelFunc
	done   chan struct{}
}

// Start brings the playground up and returns once the sample nodes are Ready and the sample CRs exist.
func Start(ctx context.Context, opts Options) (_ *Playground, err error) {
	logger := klog.FromContext(ctx)
	if opts.Dir == "" {
		opts.Dir = ".playground"
	}
	if opts.ReportTick == 0 {
		opts.ReportTick = time.Second
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}

	start := time.Now()
	env, err := harness.Start(ctx, harness.Options{})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &Playground{Env: env, Kubeconfig: filepath.Join(dir, "kubeconfig"), cancel: cancel, done: make(chan struct{})}
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

	reporter := &metricReporter{env: env, tick: opts.ReportTick}
	go func() {
		defer close(p.done)
		reporter.run(ctx)
	}()
	return p, nil
}

// create creates one sample object. Nodes are added to the node simulator; NodeMetrics get their
// status from the reporter.
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
	case *slov1alpha1.NodeMetric:
		kind, name = "NodeMetric", o.Name
		_, err = p.Env.Accord.SloV1alpha1().NodeMetrics().Create(ctx, o, metav1.CreateOptions{})
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
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
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
	fmt.Printf(`
Accord playground is running.

  export KUBECONFIG=%s
  kubectl get nodes,csres,nodemetrics

Press Ctrl-C to stop.
`, p.Kubeconfig)
	<-ctx.Done()
	klog.FromContext(ctx).Info("Shutting down the playground")
	return nil
}
