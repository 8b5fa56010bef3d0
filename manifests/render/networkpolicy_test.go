package render_test

import (
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/accord-sched/accord/manifests/render"
)

// networkPolicy.enabled (default false) renders one NetworkPolicy per enabled component: ingress to
// its serving port only (from the configured peers), egress to the apiserver's ports (and CIDRs) and
// DNS, plus accord-metrics-reporter's extra egress.
func TestChartNetworkPolicy(t *testing.T) {
	objs, err := render.Chart(chartDir, release)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "NetworkPolicy" {
			t.Errorf("networkPolicy is off by default, but the chart renders %s", o.GetName())
		}
	}
	prometheus := map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "monitoring"}}}
	r := release
	r.Values = map[string]any{
		"console": map[string]any{"enabled": true},
		"networkPolicy": map[string]any{"enabled": true, "dns": false,
			"apiserver":   map[string]any{"cidrs": []any{"10.0.0.10/32"}, "ports": []any{6443}},
			"metricsFrom": []any{prometheus}},
	}
	if objs, err = render.Chart(chartDir, r); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		port      int32
		fromPeers int
	}{
		{"accord-scheduler", 10259, 1},
		{"accord-descheduler", 10258, 1},
		{"accord-metrics-reporter", 10260, 1},
		{"accord-console", 8080, 0},
	} {
		o := render.Find(objs, "NetworkPolicy", c.name)
		if o == nil {
			t.Errorf("no NetworkPolicy %s", c.name)
			continue
		}
		var np networkingv1.NetworkPolicy
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, &np, true); err != nil {
			t.Errorf("NetworkPolicy %s: %v", c.name, err)
			continue
		}
		if got := np.Spec.PodSelector.MatchLabels["app.kubernetes.io/name"]; got != c.name {
			t.Errorf("%s selects pods of %q", c.name, got)
		}
		if dep := render.Find(objs, "Deployment", c.name); dep == nil {
			t.Errorf("%s: no Deployment of that name", c.name)
		} else if labels, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "template", "metadata", "labels"); labels["app.kubernetes.io/name"] != c.name || labels["app.kubernetes.io/instance"] != release.Name {
			t.Errorf("%s's pods are labelled %v: the NetworkPolicy would not select them", c.name, labels)
		}
		if len(np.Spec.PolicyTypes) != 2 || len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].Ports) != 1 || np.Spec.Ingress[0].Ports[0].Port.IntVal != c.port || len(np.Spec.Ingress[0].From) != c.fromPeers {
			t.Errorf("%s: policy types %v, ingress %+v: want only port %d from %d peers", c.name, np.Spec.PolicyTypes, np.Spec.Ingress, c.port, c.fromPeers)
		}
		if len(np.Spec.Egress) != 1 || len(np.Spec.Egress[0].Ports) != 1 || np.Spec.Egress[0].Ports[0].Port.IntVal != 6443 ||
			len(np.Spec.Egress[0].To) != 1 || np.Spec.Egress[0].To[0].IPBlock == nil || np.Spec.Egress[0].To[0].IPBlock.CIDR != "10.0.0.10/32" {
			t.Errorf("%s: egress %+v: want only 10.0.0.10/32:6443 (dns off)", c.name, np.Spec.Egress)
		}
	}

	// The defaults: DNS allowed, the apiserver at any address on 443 and 6443.
	r.Values = map[string]any{"networkPolicy": map[string]any{"enabled": true}}
	if objs, err = render.Chart(chartDir, r); err != nil {
		t.Fatal(err)
	}
	var np networkingv1.NetworkPolicy
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(render.Find(objs, "NetworkPolicy", "accord-descheduler").Object, &np, true); err != nil {
		t.Fatal(err)
	}
	if len(np.Spec.Egress) != 2 || len(np.Spec.Egress[0].To) != 0 || len(np.Spec.Egress[0].Ports) != 2 || len(np.Spec.Egress[1].Ports) != 2 || np.Spec.Egress[1].Ports[0].Port.IntVal != 53 {
		t.Errorf("default egress %+v: want the apiserver's two ports anywhere and DNS", np.Spec.Egress)
	}
	if render.Find(objs, "NetworkPolicy", "accord-console") != nil {
		t.Error("a NetworkPolicy for the console, which is off")
	}

	// A Prometheus source needs the reporter's egress to Prometheus, which is cluster specific.
	prom := map[string]any{"config": map[string]any{"source": map[string]any{"type": "Prometheus", "prometheus": map[string]any{"url": "http://prometheus.monitoring:9090"}}}}
	r.Values = map[string]any{"networkPolicy": map[string]any{"enabled": true}, "metricsReporter": prom}
	if _, err := render.Chart(chartDir, r); err == nil || !strings.Contains(err.Error(), "networkPolicy.metricsReporterEgress") {
		t.Errorf("a Prometheus source without networkPolicy.metricsReporterEgress: %v, want an error naming it", err)
	}
	toPrometheus := map[string]any{"to": []any{prometheus}, "ports": []any{map[string]any{"protocol": "TCP", "port": 9090}}}
	r.Values = map[string]any{"networkPolicy": map[string]any{"enabled": true, "metricsReporterEgress": []any{toPrometheus}}, "metricsReporter": prom}
	if objs, err = render.Chart(chartDir, r); err != nil {
		t.Fatal(err)
	}
	np = networkingv1.NetworkPolicy{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(render.Find(objs, "NetworkPolicy", "accord-metrics-reporter").Object, &np, true); err != nil {
		t.Fatal(err)
	}
	if len(np.Spec.Egress) != 3 || np.Spec.Egress[2].Ports[0].Port.IntVal != 9090 {
		t.Errorf("the reporter's egress %+v: want the apiserver, DNS and Prometheus", np.Spec.Egress)
	}
}
