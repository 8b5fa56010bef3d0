package render_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/accord-sched/accord/manifests/render"
	"github.com/accord-sched/accord/pkg/descheduler/app"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/lownodeload"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/nodecrdresourcefit"
	"github.com/accord-sched/accord/pkg/descheduler/simulator"
)

const (
	chartDir = "../charts/accord"
	baseDir  = ".."
)

var release = render.Release{Name: "accord", Namespace: "accord-system"}

func kinds(objs []*unstructured.Unstructured) map[string]int {
	out := map[string]int{}
	for _, o := range objs {
		out[o.GetKind()]++
	}
	return out
}

// The chart's CRDs are the generated ones, byte for byte (make chart-crds copies them).
func TestChartCRDsAreTheGeneratedOnes(t *testing.T) {
	want, err := filepath.Glob(filepath.Join(baseDir, "crds", "*.yaml"))
	if err != nil || len(want) == 0 {
		t.Fatalf("no CRDs: %v", err)
	}
	got, _ := filepath.Glob(filepath.Join(chartDir, "crds", "*.yaml"))
	if len(got) != len(want) {
		t.Errorf("chart has %d CRD files, manifests/crds %d: run make chart-crds", len(got), len(want))
	}
	for _, f := range want {
		a, _ := os.ReadFile(f)
		b, err := os.ReadFile(filepath.Join(chartDir, "crds", filepath.Base(f)))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs from the chart's copy (run make chart-crds): %v", f, err)
		}
	}
}

// loadBoth writes a rendered scheduler configuration and policy to files and loads them the way
// the binaries do: the scheduler's with simulator.LoadConfig, the policy with app.LoadPolicy given
// the scheduler's configuration (which rejects any disagreement on the shared constraints).
func loadBoth(t *testing.T, objs []*unstructured.Unstructured, schedCM, policyCM string) string {
	t.Helper()
	dir := t.TempDir()
	sched, err := render.ConfigMapData(objs, schedCM, "scheduler-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := render.ConfigMapData(objs, policyCM, "policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	schedFile, polFile := filepath.Join(dir, "sched.yaml"), filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(schedFile, []byte(sched), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(polFile, []byte(pol), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := simulator.LoadConfig(schedFile); err != nil {
		t.Fatalf("scheduler configuration: %v", err)
	}
	p, _, err := app.LoadPolicy(polFile, schedFile)
	if err != nil {
		t.Fatalf("policy: %v", err)
	}
	var sawFit, sawLoad bool
	for _, pc := range p.Profiles[0].PluginConfigs {
		switch pc.Args.(type) {
		case *nodecrdresourcefit.NodeCRDResourceFitArgs:
			sawFit = true
		case *lownodeload.LowNodeLoadArgs:
			sawLoad = true
		}
	}
	if !sawFit || !sawLoad {
		t.Errorf("policy runs NodeCRDResourceFit: %v, LowNodeLoad: %v", sawFit, sawLoad)
	}
	return pol
}

func TestChartDefaults(t *testing.T) {
	objs, err := render.Chart(chartDir, release)
	if err != nil {
		t.Fatal(err)
	}
	k := kinds(objs)
	for kind, n := range map[string]int{
		"CustomResourceDefinition": 2, "ServiceAccount": 2, "ConfigMap": 2, "Deployment": 2, "PodDisruptionBudget": 2,
		"ClusterRole": 2, "Role": 2, "RoleBinding": 3, "ClusterRoleBinding": 4,
	} {
		if k[kind] != n {
			t.Errorf("%d %s, want %d (all: %v)", k[kind], kind, n, k)
		}
	}
	if k["ServiceMonitor"] != 0 {
		t.Error("ServiceMonitor is rendered by default")
	}
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" && !strings.HasPrefix(o.GetName(), "accord-") && o.GetKind() != "RoleBinding" {
			t.Errorf("%s %s is not named after the release", o.GetKind(), o.GetName())
		}
		if ns := o.GetNamespace(); ns != "" && ns != release.Namespace && !(ns == "kube-system" && o.GetKind() == "RoleBinding") {
			t.Errorf("%s %s in namespace %s", o.GetKind(), o.GetName(), ns)
		}
	}
	loadBoth(t, objs, "accord-scheduler-config", "accord-descheduler-policy")
	dep := render.Find(objs, "Deployment", "accord-scheduler")
	image, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	if img := image[0].(map[string]any)["image"]; img != "accord-scheduler:v0.1.0" {
		t.Errorf("scheduler image %v, want accord-scheduler:<appVersion>", img)
	}
}

// One values block feeds both configurations: change it, and both change and still agree.
func TestChartConstraintsFeedBoth(t *testing.T) {
	r := release
	r.Values = map[string]any{
		"constraints": map[string]any{
			"missingCRPolicy": "Ignore",
			"loadAware": map[string]any{
				"usageThresholds":             map[string]any{"cpu": 60, "memory": 70},
				"resourceWeights":             map[string]any{"cpu": 3, "memory": 1},
				"nodeMetricExpirationSeconds": 90,
			},
		},
		"descheduler": map[string]any{"lowNodeLoad": map[string]any{"lowThresholds": map[string]any{"cpu": 30, "memory": 30}}},
		"image":       map[string]any{"repository": "registry.example.com/accord", "tag": "v9"},
	}
	objs, err := render.Chart(chartDir, r)
	if err != nil {
		t.Fatal(err)
	}
	pol := loadBoth(t, objs, "accord-scheduler-config", "accord-descheduler-policy")
	sched, _ := render.ConfigMapData(objs, "accord-scheduler-config", "scheduler-config.yaml")
	for _, want := range []string{"missingCRPolicy: Ignore", "cpu: 60", "memory: 70", "nodeMetricExpirationSeconds: 90", "cpu: 3"} {
		if !strings.Contains(sched, want) || !strings.Contains(pol, want) {
			t.Errorf("%q is not in both configurations", want)
		}
	}
	dep := render.Find(objs, "Deployment", "accord-descheduler")
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	if img := containers[0].(map[string]any)["image"]; img != "registry.example.com/accord/accord-descheduler:v9" {
		t.Errorf("descheduler image %v", img)
	}
}

// Bad values fail at render time and name the field.
func TestChartRejectsBadValues(t *testing.T) {
	for _, tc := range []struct {
		values map[string]any
		field  string
	}{
		{map[string]any{"constraints": map[string]any{"missingCRPolicy": "Sometimes"}}, "/constraints/missingCRPolicy"},
		{map[string]any{"constraints": map[string]any{"loadAware": map[string]any{"usageThresholds": map[string]any{"cpu": 120}}}}, "/constraints/loadAware/usageThresholds/cpu"},
		{map[string]any{"scheduler": map[string]any{"replicas": 0}}, "/scheduler/replicas"},
		{map[string]any{"descheduler": map[string]any{"deschedulingInterval": "often"}}, "/descheduler/deschedulingInterval"},
		{map[string]any{"descheduler": map[string]any{"dryrun": true}}, "dryrun"},
		{map[string]any{"descheduler": map[string]any{"lowNodeLoad": map[string]any{"lowThresholds": map[string]any{"cpu": 90, "memory": 10}}}}, "descheduler.lowNodeLoad.lowThresholds.cpu"},
	} {
		r := release
		r.Values = tc.values
		_, err := render.Chart(chartDir, r)
		t.Logf("values %v: %v", tc.values, err)
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("values %v: error %v does not name %s", tc.values, err, tc.field)
		}
	}
}

func TestChartServiceMonitor(t *testing.T) {
	r := release
	r.Values = map[string]any{"serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "prom"}}}
	objs, err := render.Chart(chartDir, r)
	if err != nil {
		t.Fatal(err)
	}
	if k := kinds(objs); k["ServiceMonitor"] != 2 || k["Service"] != 2 {
		t.Errorf("want 2 ServiceMonitors and 2 Services, got %v", k)
	}
	sm := render.Find(objs, "ServiceMonitor", "accord-descheduler")
	if sm == nil || sm.GetLabels()["release"] != "prom" {
		t.Errorf("ServiceMonitor accord-descheduler missing or without the extra labels: %v", sm)
	}
}

// The kustomize base renders everything, its two configurations agree, and the overlay changes the
// images.
func TestKustomize(t *testing.T) {
	base, err := render.Kustomize(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	k := kinds(base)
	for _, kind := range []string{"CustomResourceDefinition", "ServiceAccount", "ConfigMap", "Deployment", "PodDisruptionBudget", "ClusterRole", "Role", "RoleBinding", "ClusterRoleBinding"} {
		if k[kind] == 0 {
			t.Errorf("the base renders no %s (%v)", kind, k)
		}
	}
	loadBoth(t, base, "accord-scheduler-config", "accord-descheduler-policy")

	overlay, err := render.Kustomize(filepath.Join(baseDir, "..", "deploy", "overlays", "example"))
	if err != nil {
		t.Fatal(err)
	}
	var images []string
	for _, o := range overlay {
		if o.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		images = append(images, containers[0].(map[string]any)["image"].(string))
		if r, _, _ := unstructured.NestedInt64(o.Object, "spec", "replicas"); r != 1 {
			t.Errorf("overlay: %s has %d replicas, want 1", o.GetName(), r)
		}
	}
	slices.Sort(images)
	if want := []string{"registry.example.com/accord/accord-descheduler:v0.1.0", "registry.example.com/accord/accord-scheduler:v0.1.0"}; !slices.Equal(images, want) {
		t.Errorf("overlay images %v, want %v", images, want)
	}
}

// The chart's README is the values reference generated from its schema (make chart-docs).
func TestValuesReferenceUpToDate(t *testing.T) {
	want, err := render.ValuesReference(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(chartDir, render.ValuesReferenceFile))
	if err != nil || string(got) != want {
		t.Errorf("%s is stale: run make chart-docs (%v)", render.ValuesReferenceFile, err)
	}
	for _, field := range []string{"`constraints.missingCRPolicy`", "`constraints.loadAware.usageThresholds`", "`serviceMonitor.enabled`"} {
		if !strings.Contains(want, field) {
			t.Errorf("the reference lacks %s", field)
		}
	}
}
