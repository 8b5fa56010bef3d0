package playground

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/accord-sched/accord/manifests"
	"github.com/accord-sched/accord/pkg/demo/metricsapisim"
	reporterapp "github.com/accord-sched/accord/pkg/metricsreporter/app"
	"github.com/accord-sched/accord/pkg/simload"
)

// BaselineUsageAnnotation holds a node's simulated baseline usage (see package simload).
const BaselineUsageAnnotation = simload.BaselineUsageAnnotation

// MetricsServiceName names the ExternalName Service the playground's metrics.k8s.io APIService
// points at (in kube-system).
const MetricsServiceName = "accord-playground-metrics-server"

// simulatedUsage is what the playground's metrics.k8s.io serves, computed on every request from the
// informers' caches: a running pod uses what its simload.UsageAnnotation says (reported on its first
// container) and, for the resources the annotation leaves out or without one, what its containers
// request; a pod whose annotation does not parse uses its requests (the error is logged); a node uses its baseline
// (BaselineUsageAnnotation) plus the usage of its running pods. A node whose annotation does not
// parse is left out (its NodeMetric goes stale, as with a real source that has no data for it).
type simulatedUsage struct {
	logger klog.Logger
	nodes  corelisters.NodeLister
	pods   corelisters.PodLister
}

func (u *simulatedUsage) Usage() (map[string]corev1.ResourceList, map[types.NamespacedName][]metricsv1beta1.ContainerMetrics) {
	nodeList, err := u.nodes.List(labels.Everything())
	if err != nil {
		u.logger.Error(err, "Listing nodes from the cache")
	}
	podList, err := u.pods.List(labels.Everything())
	if err != nil {
		u.logger.Error(err, "Listing pods from the cache")
	}
	nodes := make(map[string]corev1.ResourceList, len(nodeList))
	for _, n := range nodeList {
		baseline, err := Baseline(n)
		if err != nil {
			u.logger.Error(err, "Node left out of the simulated metrics", "node", n.Name)
			continue
		}
		nodes[n.Name] = baseline
	}
	pods := map[types.NamespacedName][]metricsv1beta1.ContainerMetrics{}
	for _, p := range podList {
		if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning {
			continue
		}
		annotated, err := simload.PodUsage(p)
		if err != nil {
			u.logger.Error(err, "Pod reported at its requests")
		}
		containers := make([]metricsv1beta1.ContainerMetrics, 0, len(p.Spec.Containers))
		for i, c := range p.Spec.Containers {
			// Both resources are always reported (a container that requests nothing uses nothing).
			usage := corev1.ResourceList{
				corev1.ResourceCPU:    c.Resources.Requests.Cpu().DeepCopy(),
				corev1.ResourceMemory: c.Resources.Requests.Memory().DeepCopy(),
			}
			for name := range usage {
				if q, ok := annotated[name]; ok {
					// The pod's annotated usage, all of it on the first container.
					if i == 0 {
						usage[name] = q.DeepCopy()
					} else {
						usage[name] = *resource.NewQuantity(0, q.Format)
					}
				}
			}
			containers = append(containers, metricsv1beta1.ContainerMetrics{Name: c.Name, Usage: usage})
			if nodeUsage, ok := nodes[p.Spec.NodeName]; ok {
				for name, q := range usage {
					add(nodeUsage, name, q)
				}
			}
		}
		pods[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = containers
	}
	return nodes, pods
}

// Baseline returns a node's baseline usage (BaselineUsageAnnotation), cpu and memory (zero when
// unset).
func Baseline(node *corev1.Node) (corev1.ResourceList, error) {
	usage := corev1.ResourceList{}
	if raw := node.Annotations[BaselineUsageAnnotation]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &usage); err != nil {
			return nil, fmt.Errorf("annotation %s: %w", BaselineUsageAnnotation, err)
		}
	}
	out := corev1.ResourceList{corev1.ResourceCPU: usage.Cpu().DeepCopy(), corev1.ResourceMemory: usage.Memory().DeepCopy()}
	return out, nil
}

func add(list corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
	cur := list[name]
	cur.Add(q)
	list[name] = cur
}

// startMetrics serves the simulated metrics.k8s.io, registers it with the apiserver as an aggregated
// API, and runs accord-metrics-reporter on it (the command's code path, with
// manifests/metrics-reporter/playground-config.yaml written to p.MetricsReporterConfig). It returns
// once every sample node's NodeMetric has a reported status.
func (p *Playground) startMetrics(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	factory := informers.NewSharedInformerFactory(p.Env.Client, 0)
	nodes, pods := factory.Core().V1().Nodes(), factory.Core().V1().Pods()
	nodes.Informer() // registers the informers with the factory before it starts
	pods.Informer()
	factory.Start(ctx.Done())
	p.wg.Go(func() {
		<-ctx.Done()
		factory.Shutdown()
	})
	syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	logger.Info("Waiting for the simulated metrics server's node and pod informers to sync", "timeout", time.Minute)
	for typ, ok := range factory.WaitForCacheSync(syncCtx.Done()) {
		if !ok {
			return fmt.Errorf("simulated metrics: the %v informer did not sync within a minute", typ)
		}
	}

	srv, err := metricsapisim.Start(metricsapisim.Options{
		Provider:    &simulatedUsage{logger: logger.WithName("simulated-metrics"), nodes: nodes.Lister(), pods: pods.Lister()},
		ServiceName: MetricsServiceName,
	})
	if err != nil {
		return fmt.Errorf("starting the simulated metrics server: %w", err)
	}
	p.metricsAPI = srv
	start := time.Now()
	if _, err := srv.Register(ctx, p.Env.Config); err != nil {
		return fmt.Errorf("registering the simulated metrics.k8s.io: %w", err)
	}
	logger.Info("Simulated metrics.k8s.io is served through the apiserver", "apiService", metricsapisim.APIServiceName,
		"server", srv.URL(), "took", time.Since(start).Round(time.Millisecond))

	if err := os.WriteFile(p.MetricsReporterConfig, manifests.MetricsReporterPlaygroundConfig, 0o644); err != nil {
		return err
	}
	o := reporterapp.NewOptions()
	o.ConfigFile, o.Kubeconfig = p.MetricsReporterConfig, p.Kubeconfig
	// One replica in-process: no Lease to take, and no health port (the playground has no probes).
	o.LeaderElection.LeaderElect = false
	o.SecureServing.BindPort = 0
	if err := o.Validate(); err != nil {
		return fmt.Errorf("accord-metrics-reporter options: %w", err)
	}
	p.run(ctx, "accord-metrics-reporter", o.Run)

	const timeout = time.Minute
	logger.Info("Waiting for accord-metrics-reporter to report every sample node", "nodes", p.Nodes, "timeout", timeout)
	deadline := time.Now().Add(timeout)
	for {
		missing, err := p.unreported(ctx)
		if err != nil {
			return err
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("accord-metrics-reporter did not report the NodeMetrics of %v within %v", missing, timeout)
		}
		select {
		case err := <-p.errs:
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	logger.Info("accord-metrics-reporter is running", "config", p.MetricsReporterConfig)
	return nil
}

// unreported returns the sample nodes whose NodeMetric has no reported status yet.
func (p *Playground) unreported(ctx context.Context) ([]string, error) {
	nms, err := p.Env.Accord.SloV1alpha1().NodeMetrics().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing NodeMetrics: %w", err)
	}
	reported := map[string]bool{}
	for _, nm := range nms.Items {
		reported[nm.Name] = nm.Status.UpdateTime != nil
	}
	var missing []string
	for _, n := range p.Nodes {
		if !reported[n] {
			missing = append(missing, n)
		}
	}
	return missing, nil
}
