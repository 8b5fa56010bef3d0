package runtime

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"

	"github.com/accord-sched/accord/apis/descheduler"
)

func TestKubernetesMetricsRunsOnlyWhenAPluginAsks(t *testing.T) {
	mc := metricsfake.NewSimpleClientset()
	if err := mc.Tracker().Create(metricsv1beta1.SchemeGroupVersion.WithResource("nodes"), &metricsv1beta1.NodeMetrics{
		ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Usage:      corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")},
	}, ""); err != nil {
		t.Fatal(err)
	}
	p := &descheduler.DeschedulerPolicy{MetricsProviders: []descheduler.MetricsProvider{{Source: descheduler.KubernetesMetrics}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	unused, err := newMetricsProviders(p, fake.NewClientset(), MetricsOptions{Client: mc})
	if err != nil {
		t.Fatal(err)
	}
	if err := unused.start(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if n := len(mc.Actions()); n != 0 {
		t.Fatalf("metrics.k8s.io polled %d times though no plugin uses it", n)
	}

	used, err := newMetricsProviders(p, fake.NewClientset(), MetricsOptions{Client: mc})
	if err != nil {
		t.Fatal(err)
	}
	k, err := used.KubernetesMetrics()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := used.Prometheus(); err == nil || !strings.Contains(err.Error(), "configures no Prometheus source") {
		t.Fatalf("Prometheus() = %v", err)
	}
	if err := used.start(ctx); err != nil {
		t.Fatal(err)
	}
	u, err := k.NodeUsage("n1")
	if err != nil || u[corev1.ResourceCPU] != 2000 {
		t.Fatalf("NodeUsage = %v, %v", u, err)
	}

	// The deprecated metricsCollector.enabled configures the same source.
	old, err := newMetricsProviders(&descheduler.DeschedulerPolicy{MetricsCollector: &descheduler.MetricsCollector{Enabled: true}}, fake.NewClientset(), MetricsOptions{Client: mc})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.KubernetesMetrics(); err != nil {
		t.Fatal(err)
	}
	none, _ := newMetricsProviders(&descheduler.DeschedulerPolicy{}, fake.NewClientset(), MetricsOptions{Client: mc})
	if _, err := none.KubernetesMetrics(); err == nil {
		t.Fatal("no provider, no source")
	}
}

func TestSecretToken(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	tok := secretToken(corelisters.NewSecretLister(idx), "mon", "tok")
	if _, err := tok(); err == nil || !strings.Contains(err.Error(), "secret mon/tok (metricsProviders authToken) does not exist") {
		t.Fatalf("missing secret: %v", err)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "mon", Name: "tok"}, Data: map[string][]byte{"token": []byte("x")}}
	_ = idx.Add(s)
	if _, err := tok(); err == nil || !strings.Contains(err.Error(), `no "prometheusAuthToken" data`) {
		t.Fatalf("wrong key: %v", err)
	}
	s = s.DeepCopy()
	s.Data = map[string][]byte{PrometheusAuthTokenKey: []byte("s3cret")}
	_ = idx.Update(s)
	if got, err := tok(); err != nil || got != "s3cret" {
		t.Fatalf("token = %q, %v", got, err)
	}
}
