package render_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/accord-sched/accord/manifests/render"
)

// console.enabled (default false) adds accord-console with the read-only ClusterRole of
// manifests/console/rbac.yaml; explain's flags and ConfigMaps come only with the descheduler.
func TestChartConsole(t *testing.T) {
	objs, err := render.Chart(chartDir, release)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if strings.Contains(o.GetName(), "console") {
			t.Errorf("console is off by default, but the chart renders %s %s", o.GetKind(), o.GetName())
		}
	}
	r := release
	r.Values = map[string]any{"console": map[string]any{"enabled": true}}
	if objs, err = render.Chart(chartDir, r); err != nil {
		t.Fatal(err)
	}
	consoleRBAC(t, objs, "accord-console")
	for _, kind := range []string{"ServiceAccount", "ClusterRoleBinding", "Service", "Deployment"} {
		if render.Find(objs, kind, "accord-console") == nil {
			t.Errorf("console.enabled renders no %s accord-console", kind)
		}
	}
	args := consoleArgs(t, objs)
	for _, want := range []string{"--bind-address=0.0.0.0:8080", "--authentication=token", "--token-audience=accord-console", "--session-max-age=8h", "--policy-config-file=/policy-dir/policy.yaml", "--scheduler-config-file=/etc/accord-scheduler/scheduler-config.yaml"} {
		if !slices.Contains(args, want) {
			t.Errorf("console args %v: missing %s", args, want)
		}
	}
	if slices.Contains(args, "--playground") {
		t.Error("the chart must never enable the playground's write controls")
	}
	dep := render.Find(objs, "Deployment", "accord-console")
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	for _, probe := range []string{"livenessProbe", "readinessProbe"} {
		if scheme, _, _ := unstructured.NestedString(containers[0].(map[string]any), probe, "httpGet", "scheme"); scheme != "HTTPS" {
			t.Errorf("console %s scheme %q, want HTTPS", probe, scheme)
		}
	}

	// With console.tlsSecretName, the Secret is mounted and named to the TLS flags.
	r.Values = map[string]any{"console": map[string]any{"enabled": true, "tlsSecretName": "console-tls"}}
	if objs, err = render.Chart(chartDir, r); err != nil {
		t.Fatal(err)
	}
	args = consoleArgs(t, objs)
	for _, want := range []string{"--tls-cert-file=/etc/accord-console/tls/tls.crt", "--tls-private-key-file=/etc/accord-console/tls/tls.key"} {
		if !slices.Contains(args, want) {
			t.Errorf("console args with tlsSecretName %v: missing %s", args, want)
		}
	}
	dep = render.Find(objs, "Deployment", "accord-console")
	volumes, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "volumes")
	if !slices.ContainsFunc(volumes, func(v any) bool {
		name, _, _ := unstructured.NestedString(v.(map[string]any), "secret", "secretName")
		return name == "console-tls"
	}) {
		t.Errorf("console volumes %v: no Secret console-tls", volumes)
	}

	r.Values = map[string]any{"console": map[string]any{"enabled": true}, "descheduler": map[string]any{"enabled": false}}
	if objs, err = render.Chart(chartDir, r); err != nil {
		t.Fatal(err)
	}
	if args := consoleArgs(t, objs); slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--policy-config-file") }) {
		t.Errorf("without the descheduler there is no policy to explain, but the console gets %v", args)
	}
}

func consoleArgs(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	dep := render.Find(objs, "Deployment", "accord-console")
	if dep == nil {
		t.Fatal("no Deployment accord-console")
	}
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	var args []string
	for _, a := range containers[0].(map[string]any)["args"].([]any) {
		args = append(args, fmt.Sprint(a))
	}
	return args
}

// consoleRBAC checks that a rendered ClusterRole of accord-console grants exactly the rules of
// manifests/console/rbac.yaml (the read-only role test/integration/consolerbac runs the console with).
func consoleRBAC(t *testing.T, objs []*unstructured.Unstructured, name string) {
	t.Helper()
	base, err := render.Objects(mustRead(t, filepath.Join(baseDir, "console", "rbac.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	want := render.Find(base, "ClusterRole", "accord-console")
	got := render.Find(objs, "ClusterRole", name)
	if want == nil || got == nil {
		t.Fatalf("ClusterRole: manifests %v, rendered %s: %v", want != nil, name, got != nil)
	}
	if w, g := fmt.Sprint(want.Object["rules"]), fmt.Sprint(got.Object["rules"]); w != g {
		t.Errorf("ClusterRole %s rules\n%s\nwant (manifests/console/rbac.yaml)\n%s", name, g, w)
	}
}
