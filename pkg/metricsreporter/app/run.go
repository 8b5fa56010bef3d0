// Package app is accord-metrics-reporter's command: flags, serving /healthz /readyz /metrics, leader
// election, and Run, which starts the informers and the reporter (tests run it in-process).
package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/apis/metricsreporter/v1alpha1"
	accordclient "github.com/accord-sched/accord/pkg/generated/clientset/versioned"
	accordinformers "github.com/accord-sched/accord/pkg/generated/informers/externalversions"
	"github.com/accord-sched/accord/pkg/metricsource"
	"github.com/accord-sched/accord/pkg/metricsreporter"
)

// nodeIndex indexes pods by spec.nodeName.
const nodeIndex = "spec.nodeName"

// CacheSyncTimeout bounds the wait for the informers' first lists.
const CacheSyncTimeout = 2 * time.Minute

// Config is what Run needs.
type Config struct {
	RestConfig *rest.Config
	Config     *v1alpha1.MetricsReporterConfiguration
	Metrics    *metricsreporter.Metrics
	// Source overrides the source the configuration names (tests).
	Source metricsource.UsageSource
	// OnReady is called once the informers have synced.
	OnReady func()
}

// NewSource builds the source cfg names.
func NewSource(restCfg *rest.Config, cfg *v1alpha1.MetricsReporterConfiguration) (metricsource.UsageSource, error) {
	switch cfg.Source.Type {
	case v1alpha1.SourceKubernetesMetrics:
		rm, err := metricsource.NewResourceMetricsForConfig(rest.AddUserAgent(restCfg, "accord-metrics-reporter"))
		if err != nil {
			return nil, err
		}
		return metricsource.KubernetesUsage{ResourceMetrics: rm}, nil
	case v1alpha1.SourcePrometheus:
		p := cfg.Source.Prometheus
		pc := metricsource.PrometheusConfig{URL: p.URL, CAFile: p.CAFile, Timeout: time.Duration(*p.TimeoutSeconds) * time.Second}
		if p.BearerTokenFile != "" {
			pc.Token = metricsource.ServiceAccountToken(p.BearerTokenFile)
		}
		client, err := metricsource.NewPrometheus(pc)
		if err != nil {
			return nil, fmt.Errorf("source.prometheus: %w", err)
		}
		return metricsource.PrometheusUsage{Client: client, Queries: metricsource.PrometheusUsageQueries{
			NodeCPU: p.NodeCPUQuery, NodeMemory: p.NodeMemoryQuery, PodCPU: p.PodCPUQuery, PodMemory: p.PodMemoryQuery,
			NodeLabel: p.NodeLabel, PodNamespaceLabel: p.PodNamespaceLabel, PodNameLabel: p.PodNameLabel,
		}}, nil
	}
	return nil, fmt.Errorf("source.type: unsupported %q", cfg.Source.Type)
}

// Run starts informers for nodes, non-terminal pods (indexed by node) and NodeMetrics, and runs
// the reporter until ctx ends.
func Run(ctx context.Context, c Config) error {
	logger := klog.FromContext(ctx)
	if c.Metrics == nil {
		c.Metrics = metricsreporter.NewMetrics()
	}
	src := c.Source
	if src == nil {
		var err error
		if src, err = NewSource(c.RestConfig, c.Config); err != nil {
			return err
		}
	}
	kube, err := kubernetes.NewForConfig(rest.AddUserAgent(c.RestConfig, "accord-metrics-reporter"))
	if err != nil {
		return err
	}
	crCfg := rest.CopyConfig(c.RestConfig)
	crCfg.ContentType = "application/json"
	accord, err := accordclient.NewForConfig(rest.AddUserAgent(crCfg, "accord-metrics-reporter"))
	if err != nil {
		return err
	}
	kf := informers.NewSharedInformerFactory(kube, 0)
	pf := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.AndSelectors(
			fields.OneTermNotEqualSelector("spec.nodeName", ""),
			fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
			fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
		).String()
	}))
	af := accordinformers.NewSharedInformerFactory(accord, 0)
	nodes := kf.Core().V1().Nodes()
	pods := pf.Core().V1().Pods()
	nms := af.Slo().V1alpha1().NodeMetrics()
	if err := pods.Informer().AddIndexers(cache.Indexers{nodeIndex: func(obj any) ([]string, error) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" {
			return nil, nil
		}
		return []string{p.Spec.NodeName}, nil
	}}); err != nil {
		return err
	}
	podIndexer := pods.Informer().GetIndexer()
	r := metricsreporter.New(metricsreporter.Options{
		Config: c.Config, Source: src, Writer: metricsreporter.ClientWriter{Client: accord},
		Nodes: nodes.Lister(), NodeMetrics: nms.Lister(), Metrics: c.Metrics,
		PodsOnNode: func(node string) ([]*corev1.Pod, error) {
			objs, err := podIndexer.ByIndex(nodeIndex, node)
			if err != nil {
				return nil, err
			}
			out := make([]*corev1.Pod, 0, len(objs))
			for _, o := range objs {
				out = append(out, o.(*corev1.Pod))
			}
			return out, nil
		},
	})
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if n, ok := obj.(*corev1.Node); ok {
			r.Forget(n.Name)
		}
	}}); err != nil {
		return err
	}
	kf.Start(ctx.Done())
	pf.Start(ctx.Done())
	af.Start(ctx.Done())
	defer kf.Shutdown()
	defer pf.Shutdown()
	defer af.Shutdown()
	logger.Info("Waiting for the node, pod and NodeMetric informers to sync", "timeout", CacheSyncTimeout)
	syncCtx, cancel := context.WithTimeout(ctx, CacheSyncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), nodes.Informer().HasSynced, pods.Informer().HasSynced, nms.Informer().HasSynced) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("informer caches did not sync within " + CacheSyncTimeout.String() + " (are the NodeMetric CRD and RBAC installed?)")
	}
	if c.OnReady != nil {
		c.OnReady()
	}
	r.Run(ctx)
	return nil
}
