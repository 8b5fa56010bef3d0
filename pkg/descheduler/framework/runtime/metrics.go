package runtime

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"

	"github.com/accord-sched/accord/apis/descheduler"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/metricsource"
)

// PrometheusAuthTokenKey is the data key of the Secret named by
// metricsProviders[].prometheus.authToken.secretReference that holds the bearer token (as upstream).
const PrometheusAuthTokenKey = "prometheusAuthToken"

// MetricsStartTimeout bounds how long StartMetrics waits for a source's first poll and for the
// token Secret's informer.
const MetricsStartTimeout = 30 * time.Second

// MetricsOptions tune how the policy's metrics providers are reached.
type MetricsOptions struct {
	// Client reaches metrics.k8s.io; required when a plugin uses the KubernetesMetrics source.
	Client metricsclient.Interface
	// Collector tunes the metrics.k8s.io node usage collector (defaults: pkg/metricsource).
	Collector metricsource.CollectorOptions
	// PrometheusTransport replaces the default transport to Prometheus (tests).
	PrometheusTransport http.RoundTripper
	// ServiceAccountTokenFile is sent as the bearer token to a Prometheus provider without authToken,
	// when the file exists; default metricsource.ServiceAccountTokenFile.
	ServiceAccountTokenFile string
}

// metricsProviders builds and runs the sources a policy configures; it implements
// framework.MetricsProviders for every profile's plugins.
type metricsProviders struct {
	kube *kubeMetrics
	prom *promMetrics
}

var _ framework.MetricsProviders = &metricsProviders{}

type kubeMetrics struct {
	source    *metricsource.ResourceMetrics
	collector *metricsource.NodeCollector
	needed    atomic.Bool
}

type promMetrics struct {
	url     string
	client  *metricsource.Prometheus
	needed  atomic.Bool
	secrets informers.SharedInformerFactory // nil without authToken
	secret  string                          // namespace/name of the token Secret
	ns      string                          // its namespace
	synced  cache.InformerSynced
}

// newMetricsProviders builds the clients of the sources p configures; nothing runs until
// StartMetrics, and only what a plugin asked for.
func newMetricsProviders(p *descheduler.DeschedulerPolicy, client clientset.Interface, opts MetricsOptions) (*metricsProviders, error) {
	mp := &metricsProviders{}
	kube := p.MetricsCollector != nil && p.MetricsCollector.Enabled
	for _, prov := range p.MetricsProviders {
		switch prov.Source {
		case descheduler.KubernetesMetrics:
			kube = true
		case descheduler.PrometheusMetrics:
			pm, err := newPromMetrics(prov.Prometheus, client, opts)
			if err != nil {
				return nil, err
			}
			mp.prom = pm
		}
	}
	if kube {
		mp.kube = &kubeMetrics{}
		if opts.Client != nil {
			mp.kube.source = metricsource.NewResourceMetrics(opts.Client)
			mp.kube.collector = metricsource.NewNodeCollector(mp.kube.source, opts.Collector)
		}
	}
	return mp, nil
}

func newPromMetrics(cfg *descheduler.Prometheus, client clientset.Interface, opts MetricsOptions) (*promMetrics, error) {
	if cfg == nil {
		return nil, errors.New("metricsProviders: the Prometheus source needs its prometheus settings")
	}
	pm := &promMetrics{url: cfg.URL}
	var token func() (string, error)
	if cfg.AuthToken != nil && cfg.AuthToken.SecretReference != nil {
		ref := cfg.AuthToken.SecretReference
		pm.secret, pm.ns = ref.Namespace+"/"+ref.Name, ref.Namespace
		pm.secrets = informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ref.Namespace),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.FieldSelector = fields.OneTermEqualSelector("metadata.name", ref.Name).String()
			}))
		inf := pm.secrets.Core().V1().Secrets()
		pm.synced = inf.Informer().HasSynced
		token = secretToken(inf.Lister(), ref.Namespace, ref.Name)
	} else {
		file := opts.ServiceAccountTokenFile
		if file == "" {
			file = metricsource.ServiceAccountTokenFile
		}
		token = metricsource.ServiceAccountToken(file)
	}
	c, err := metricsource.NewPrometheus(metricsource.PrometheusConfig{URL: cfg.URL, Token: token,
		Transport: opts.PrometheusTransport, CAFile: metricsource.ServiceAccountCAFile})
	if err != nil {
		return nil, fmt.Errorf("metricsProviders: %w", err)
	}
	pm.client = c
	return pm, nil
}

// secretToken reads the bearer token from the Secret's informer cache at every request.
func secretToken(lister corelisters.SecretLister, namespace, name string) func() (string, error) {
	return func() (string, error) {
		s, err := lister.Secrets(namespace).Get(name)
		if apierrors.IsNotFound(err) {
			return "", fmt.Errorf("secret %s/%s (metricsProviders authToken) does not exist", namespace, name)
		}
		if err != nil {
			return "", err
		}
		tok := string(s.Data[PrometheusAuthTokenKey])
		if tok == "" {
			return "", fmt.Errorf("secret %s/%s has no %q data", namespace, name, PrometheusAuthTokenKey)
		}
		return tok, nil
	}
}

func (mp *metricsProviders) KubernetesMetrics() (framework.KubernetesMetrics, error) {
	if mp.kube == nil {
		return nil, errors.New("the policy configures no KubernetesMetrics source (metricsProviders: [{source: KubernetesMetrics}])")
	}
	if mp.kube.collector == nil {
		return nil, errors.New("no metrics.k8s.io client was given to the descheduler runtime")
	}
	mp.kube.needed.Store(true)
	return mp.kube, nil
}

func (mp *metricsProviders) Prometheus() (framework.PrometheusMetrics, error) {
	if mp.prom == nil {
		return nil, errors.New("the policy configures no Prometheus source (metricsProviders: [{source: Prometheus, prometheus: {url: ...}}])")
	}
	mp.prom.needed.Store(true)
	return mp.prom.client, nil
}

func (k *kubeMetrics) NodeUsage(node string) (map[corev1.ResourceName]int64, error) {
	return k.collector.NodeUsage(node)
}

func (k *kubeMetrics) PodUsage(ctx context.Context, pod *corev1.Pod) (map[corev1.ResourceName]int64, error) {
	s, err := k.source.PodUsage(ctx, pod.Namespace, pod.Name)
	if err != nil {
		return nil, err
	}
	m, ok := metricsource.MilliValues(s.Usage, corev1.ResourceCPU, corev1.ResourceMemory)
	if !ok {
		return nil, fmt.Errorf("metrics.k8s.io pod %s/%s does not report cpu and memory for every container", pod.Namespace, pod.Name)
	}
	return m, nil
}

// start runs the sources some plugin asked for: the metrics.k8s.io collector (waiting for its first
// poll, which may fail: plugins then skip their cycles until a poll succeeds) and the informer of the
// Prometheus token Secret (which must sync). Sources nobody asked for are logged and left alone.
func (mp *metricsProviders) start(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	if k := mp.kube; k != nil {
		if !k.needed.Load() {
			logger.Info("The KubernetesMetrics metrics provider is configured but no plugin uses it; not polling metrics.k8s.io")
		} else {
			go k.collector.Run(ctx)
			logger.Info("Waiting for the first poll of metrics.k8s.io", "timeout", MetricsStartTimeout)
			wctx, cancel := context.WithTimeout(ctx, MetricsStartTimeout)
			ok := k.collector.WaitForFirstAttempt(wctx)
			cancel()
			if !ok && ctx.Err() == nil {
				logger.Info("metrics.k8s.io has not answered yet; plugins that need it skip their cycles until it does")
			} else if err := k.collector.Healthy(); err != nil {
				logger.Error(err, "metrics.k8s.io is not usable yet; plugins that need it skip their cycles until it is")
			}
		}
	}
	if p := mp.prom; p != nil {
		if !p.needed.Load() {
			logger.Info("The Prometheus metrics provider is configured but no plugin uses it", "url", p.url)
		} else if p.secrets != nil {
			p.secrets.Start(ctx.Done())
			logger.Info("Waiting for the Prometheus token Secret's informer", "secret", p.secret, "timeout", MetricsStartTimeout)
			wctx, cancel := context.WithTimeout(ctx, MetricsStartTimeout)
			ok := cache.WaitForCacheSync(wctx.Done(), p.synced)
			cancel()
			if !ok && ctx.Err() == nil {
				return fmt.Errorf("metricsProviders: cannot watch secret %s within %s (the descheduler needs get, list and watch on secrets in namespace %s)",
					p.secret, MetricsStartTimeout, p.ns)
			}
		}
	}
	return nil
}

func (mp *metricsProviders) shutdown() {
	if mp.prom != nil {
		if mp.prom.secrets != nil {
			mp.prom.secrets.Shutdown()
		}
		mp.prom.client.CloseIdleConnections()
	}
}
