package security

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/accord-sched/accord/manifests/render"
)

// booleanValues lists the dotted paths of every boolean in the chart's values.yaml: the switches the
// chart documents.
func booleanValues(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(chartDir + "/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			switch v := m[k].(type) {
			case bool:
				out = append(out, prefix+k)
			case map[string]any:
				walk(prefix+k+".", v)
			}
		}
	}
	walk("", values)
	return out
}

// set returns values with the dotted path set to v.
func set(values map[string]any, path string, v any) map[string]any {
	parts := strings.Split(path, ".")
	m := values
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = v
	return values
}

// TestPodsAreRestricted renders the chart with its defaults, with every component on (the console
// included) and with each documented boolean flipped from its default, and the kustomize base, and
// creates a pod from every Deployment's template (a server-side dry run, which runs admission) in a
// namespace labelled pod-security.kubernetes.io/enforce: restricted: PodSecurity admission must admit
// each, without warnings.
func TestPodsAreRestricted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := env.CreateNamespace(t, "restricted")
	nsObj, err := env.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nsObj.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	nsObj.Labels["pod-security.kubernetes.io/enforce-version"] = "latest"
	nsObj.Labels["pod-security.kubernetes.io/warn"] = "restricted"
	if _, err := env.Client.CoreV1().Namespaces().Update(ctx, nsObj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	allOn := map[string]any{"console": map[string]any{"enabled": true}, "serviceMonitor": map[string]any{"enabled": true}}
	renders := map[string]map[string]any{"defaults": {}, "every component": allOn}
	defaults, err := os.ReadFile(chartDir + "/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var dv map[string]any
	if err := yaml.Unmarshal(defaults, &dv); err != nil {
		t.Fatal(err)
	}
	for _, path := range booleanValues(t) {
		v := dv
		for _, p := range strings.Split(path, ".") {
			if m, ok := v[p].(map[string]any); ok {
				v = m
			} else {
				// The flipped value, with the console on so that its pod is checked too.
				renders[path+"="+fmt.Sprint(!v[p].(bool))] = set(set(map[string]any{}, "console.enabled", true), path, !v[p].(bool))
			}
		}
	}
	var admitted, policies, deployments int
	// check creates the pods; want is the number of Deployments the render must hold.
	check := func(source string, objs []*unstructured.Unstructured, want int) {
		seen := 0
		defer func() {
			if seen != want {
				t.Errorf("%s: %d Deployments rendered, want %d", source, seen, want)
			}
			deployments += seen
		}()
		for _, o := range objs {
			if o.GetKind() == "NetworkPolicy" {
				// networkPolicy.enabled: the apiserver validates what the chart renders.
				var np networkingv1.NetworkPolicy
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &np); err != nil {
					t.Fatalf("%s: NetworkPolicy %s: %v", source, o.GetName(), err)
				}
				np.Namespace = ns
				if _, err := env.Client.NetworkingV1().NetworkPolicies(ns).Create(ctx, &np, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
					t.Errorf("%s: NetworkPolicy %s is refused: %v", source, o.GetName(), err)
				}
				policies++
				continue
			}
			if o.GetKind() != "Deployment" {
				continue
			}
			seen++
			var d appsv1.Deployment
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
				t.Fatalf("%s: Deployment %s: %v", source, o.GetName(), err)
			}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: d.Name + "-", Namespace: ns, Labels: d.Spec.Template.Labels}, Spec: d.Spec.Template.Spec}
			// A system-*-critical priority class is admitted in kube-system only (Priority admission);
			// PodSecurity does not look at it.
			pod.Spec.PriorityClassName = ""
			result := env.Client.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Param("dryRun", "All").Body(pod).Do(ctx)
			if err := result.Error(); err != nil {
				t.Errorf("%s: the pod of Deployment %s is not admitted at enforce: restricted: %v", source, d.Name, err)
				continue
			}
			for _, w := range result.Warnings() {
				t.Errorf("%s: the pod of Deployment %s is admitted with a warning: %s", source, d.Name, w.Text)
			}
			admitted++
		}
	}
	for _, name := range slices.Sorted(maps.Keys(renders)) {
		objs, err := render.Chart(chartDir, render.Release{Name: "accord", Namespace: ns, Values: renders[name]})
		if err != nil {
			t.Fatalf("chart with %s: %v", name, err)
		}
		// One Deployment per component the render turns on (the render's value, else the default).
		want := 0
		for _, c := range []string{"scheduler", "descheduler", "metricsReporter", "console"} {
			on := dv[c].(map[string]any)["enabled"].(bool)
			if m, ok := renders[name][c].(map[string]any); ok {
				if v, ok := m["enabled"].(bool); ok {
					on = v
				}
			}
			if on {
				want++
			}
		}
		check("chart ("+name+")", objs, want)
	}
	objs, err := render.Kustomize(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	// The base installs the four components.
	check("kustomize base", objs, 4)
	t.Logf("%d chart renders (defaults, every component, %d booleans flipped) and the kustomize base: %d Deployments, %d pods admitted at enforce: restricted, %d NetworkPolicies valid", len(renders), len(renders)-2, deployments, admitted, policies)
	if admitted != deployments || deployments == 0 {
		t.Errorf("%d pods admitted of the %d Deployments rendered", admitted, deployments)
	}
	if policies == 0 {
		t.Error("no render with networkPolicy.enabled: the NetworkPolicies went unchecked")
	}
}
