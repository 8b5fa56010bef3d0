package policy_test

import (
	"slices"
	"testing"

	"github.com/accord-sched/accord/apis/descheduler"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/lownodeutilization"
	"github.com/accord-sched/accord/pkg/descheduler/policy"
)

// TestMetricsPolicies decodes and validates the policies with metricsProviders (upstream's "Example
// policy" content) and with the deprecated metricsCollector.
func TestMetricsPolicies(t *testing.T) {
	reg, args := registries(t)
	p, err := policy.Load("testdata/metrics-providers.yaml", reg, args)
	if err != nil {
		t.Fatal(err)
	}
	want := []descheduler.MetricsProvider{{Source: descheduler.PrometheusMetrics, Prometheus: &descheduler.Prometheus{
		URL:       "https://prometheus-k8s.monitoring.svc:9091",
		AuthToken: &descheduler.AuthToken{SecretReference: &descheduler.SecretReference{Namespace: "monitoring", Name: "descheduler-prometheus-token"}},
	}}}
	if len(p.MetricsProviders) != 1 || *p.MetricsProviders[0].Prometheus.AuthToken.SecretReference != *want[0].Prometheus.AuthToken.SecretReference ||
		p.MetricsProviders[0].Prometheus.URL != want[0].Prometheus.URL || p.MetricsProviders[0].Source != want[0].Source {
		t.Fatalf("metricsProviders = %+v", p.MetricsProviders)
	}
	if *p.NodeSelector != "pool=general" || *p.MaxNoOfPodsToEvictTotal != 1000 || *p.GracePeriodSeconds != 45 {
		t.Fatalf("top-level fields: %+v", p)
	}

	p, err = policy.Load("testdata/metrics-collector.yaml", reg, args)
	if err != nil {
		t.Fatal(err)
	}
	if p.MetricsCollector == nil || !p.MetricsCollector.Enabled {
		t.Fatalf("metricsCollector = %+v", p.MetricsCollector)
	}
	for _, pc := range p.Profiles[0].PluginConfigs {
		if a, ok := pc.Args.(*lownodeutilization.LowNodeUtilizationArgs); ok {
			if a.MetricsUtilization == nil || !a.MetricsUtilization.MetricsServer {
				t.Fatalf("metricsUtilization = %+v", a.MetricsUtilization)
			}
			return
		}
	}
	t.Fatal("no LowNodeUtilization args")
}

func TestMetricsProvidersValidation(t *testing.T) {
	reg, args := registries(t)
	cases := map[string]struct {
		doc  string
		want []string
	}{
		"both providers": {`
metricsProviders:
- source: KubernetesMetrics
- source: Prometheus
  prometheus: {url: "http://prom:9090"}
profiles: [{name: p}]`, nil},
		"a source twice": {`
metricsProviders:
- source: KubernetesMetrics
- source: KubernetesMetrics
profiles: [{name: p}]`, []string{"FieldValueDuplicate metricsProviders[1].source"}},
		"collector and provider": {`
metricsCollector: {enabled: true}
metricsProviders: [{source: KubernetesMetrics}]
profiles: [{name: p}]`, []string{"FieldValueInvalid metricsProviders[0].source"}},
		"collector disabled and provider": {`
metricsCollector: {enabled: false}
metricsProviders: [{source: KubernetesMetrics}]
profiles: [{name: p}]`, nil},
		"unknown and missing source": {`
metricsProviders: [{source: Datadog}, {}]
profiles: [{name: p}]`, []string{"FieldValueNotSupported metricsProviders[0].source", "FieldValueRequired metricsProviders[1].source"}},
		"prometheus settings on KubernetesMetrics": {`
metricsProviders: [{source: KubernetesMetrics, prometheus: {url: "http://x"}}]
profiles: [{name: p}]`, []string{"FieldValueInvalid metricsProviders[0].prometheus"}},
		"prometheus without settings": {`
metricsProviders: [{source: Prometheus}]
profiles: [{name: p}]`, []string{"FieldValueRequired metricsProviders[0].prometheus"}},
		"prometheus url": {`
metricsProviders: [{source: Prometheus, prometheus: {url: "prom:9090"}}]
profiles: [{name: p}]`, []string{"FieldValueInvalid metricsProviders[0].prometheus.url"}},
		"prometheus without url": {`
metricsProviders: [{source: Prometheus, prometheus: {authToken: {secretReference: {namespace: a, name: b}}}}]
profiles: [{name: p}]`, []string{"FieldValueRequired metricsProviders[0].prometheus.url"}},
		"authToken without secret": {`
metricsProviders: [{source: Prometheus, prometheus: {url: "http://p", authToken: {}}}]
profiles: [{name: p}]`, []string{"FieldValueRequired metricsProviders[0].prometheus.authToken.secretReference"}},
		"secret without names": {`
metricsProviders: [{source: Prometheus, prometheus: {url: "http://p", authToken: {secretReference: {}}}}]
profiles: [{name: p}]`, []string{"FieldValueRequired metricsProviders[0].prometheus.authToken.secretReference.namespace",
			"FieldValueRequired metricsProviders[0].prometheus.authToken.secretReference.name"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := policy.Decode([]byte("apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n"+tc.doc), args)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			var got []string
			for _, e := range policy.Validate(p, reg, args) {
				got = append(got, string(e.Type)+" "+e.Field)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("errors %q, want %q", got, tc.want)
			}
		})
	}
}

func TestMetricsFieldsAreStrict(t *testing.T) {
	_, args := registries(t)
	for _, doc := range []string{
		"metricsProviders: [{source: Prometheus, prometheus: {uri: \"http://p\"}}]\nprofiles: [{name: p}]",
		"metricsCollector: {enable: true}\nprofiles: [{name: p}]",
	} {
		if _, err := policy.Decode([]byte("apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n"+doc), args); err == nil {
			t.Errorf("misspelled field accepted: %s", doc)
		}
	}
}
