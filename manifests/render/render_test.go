package render_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	mrv1alpha1 "github.com/accord-sched/accord/apis/metricsreporter/v1alpha1"
	"github.com/accord-sched/accord/manifests/monitoring"
	"github.com/accord-sched/accord/manifests/render"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/lownodeload"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/nodecrdresourcefit"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
	"github.com/accord-sched/accord/pkg/descheduler/simulator"
	"github.com/accord-sched/accord/pkg/metricsreporter"
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
// the binaries do: the scheduler's with simulator.LoadConfig, the policy with runner.LoadPolicy given
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
	p, _, err := runner.LoadPolicy(polFile, schedFile)
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
		"CustomResourceDefinition": 4, "ServiceAccount": 3, "ConfigMap": 3, "Deployment": 3, "PodDisruptionBudget": 3,
		// The metrics reader; each secure port's system:auth-delegator binding and authentication
		// reader (the scheduler's auth-delegator rights come with system:kube-scheduler).
		"ClusterRole": 4, "Role": 3, "RoleBinding": 6, "ClusterRoleBinding": 7,
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
	loadReporter(t, objs, "accord-metrics-reporter-config")
	reporterRBAC(t, objs, "accord-metrics-reporter")
}

// loadReporter decodes a rendered MetricsReporterConfiguration as accord-metrics-reporter does.
func loadReporter(t *testing.T, objs []*unstructured.Unstructured, cm string) *mrv1alpha1.MetricsReporterConfiguration {
	t.Helper()
	data, err := render.ConfigMapData(objs, cm, "config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := metricsreporter.DecodeConfig([]byte(data))
	if err != nil {
		t.Fatalf("accord-metrics-reporter configuration: %v", err)
	}
	return cfg
}

// reporterRBAC checks that a rendered ClusterRole of accord-metrics-reporter grants exactly the rules
// of manifests/metrics-reporter/rbac.yaml (the least privilege the RBAC integration test runs it with).
func reporterRBAC(t *testing.T, objs []*unstructured.Unstructured, name string) {
	t.Helper()
	base, err := render.Objects(mustRead(t, filepath.Join(baseDir, "metrics-reporter", "rbac.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	want := render.Find(base, "ClusterRole", "accord-metrics-reporter")
	got := render.Find(objs, "ClusterRole", name)
	if want == nil || got == nil {
		t.Fatalf("ClusterRole: manifests %v, rendered %s: %v", want != nil, name, got != nil)
	}
	if w, g := fmt.Sprint(want.Object["rules"]), fmt.Sprint(got.Object["rules"]); w != g {
		t.Errorf("ClusterRole %s rules\n%s\nwant (manifests/metrics-reporter/rbac.yaml)\n%s", name, g, w)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// metricsReporter.enabled=false leaves the reporter out; its config values reach the ConfigMap.
func TestChartMetricsReporter(t *testing.T) {
	r := release
	r.Values = map[string]any{"metricsReporter": map[string]any{"enabled": false}}
	objs, err := render.Chart(chartDir, r)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if strings.Contains(o.GetName(), "metrics-reporter") {
			t.Errorf("metricsReporter.enabled=false renders %s %s", o.GetKind(), o.GetName())
		}
	}
	r.Values = map[string]any{"metricsReporter": map[string]any{"config": map[string]any{"statistic": "last", "samplingPeriodSeconds": 5}}}
	objs, err = render.Chart(chartDir, r)
	if err != nil {
		t.Fatal(err)
	}
	cfg := loadReporter(t, objs, "accord-metrics-reporter-config")
	if cfg.Statistic != "last" || *cfg.SamplingPeriodSeconds != 5 || *cfg.DefaultReportIntervalSeconds != 60 {
		t.Errorf("rendered configuration: statistic %q, samplingPeriodSeconds %d, defaultReportIntervalSeconds %d", cfg.Statistic, *cfg.SamplingPeriodSeconds, *cfg.DefaultReportIntervalSeconds)
	}
	dep := render.Find(objs, "Deployment", "accord-metrics-reporter")
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	args := fmt.Sprint(containers[0].(map[string]any)["args"])
	for _, want := range []string{"--leader-elect=true", "--leader-elect-resource-name=accord-metrics-reporter", "--leader-elect-resource-namespace=accord-system", "--config=/etc/accord-metrics-reporter/config.yaml"} {
		if !strings.Contains(args, want) {
			t.Errorf("reporter args %s lack %s", args, want)
		}
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
		{map[string]any{"metricsReporter": map[string]any{"config": map[string]any{"statistic": "p100"}}}, "/metricsReporter/config/statistic"},
		{map[string]any{"metricsReporter": map[string]any{"config": map[string]any{"source": map[string]any{"type": "Graphite"}}}}, "/metricsReporter/config/source/type"},
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
	if k := kinds(objs); k["ServiceMonitor"] != 3 || k["Service"] != 3 {
		t.Errorf("want 3 ServiceMonitors and 3 Services, got %v", k)
	}
	if svc := render.Find(objs, "Service", "accord-metrics-reporter-metrics"); svc == nil {
		t.Error("no metrics Service for accord-metrics-reporter")
	} else if ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports"); fmt.Sprint(ports[0].(map[string]any)["port"]) != "10260" {
		t.Errorf("accord-metrics-reporter metrics Service ports %v, want 10260", ports)
	}
	sm := render.Find(objs, "ServiceMonitor", "accord-descheduler")
	if sm == nil || sm.GetLabels()["release"] != "prom" {
		t.Errorf("ServiceMonitor accord-descheduler missing or without the extra labels: %v", sm)
	}
}

// prometheusRule.enabled renders a PrometheusRule whose spec is manifests/monitoring's rules file, and
// grafanaDashboard.enabled a ConfigMap with the dashboard and the sidecar's label; both are off by
// default.
func TestChartMonitoring(t *testing.T) {
	objs, err := render.Chart(chartDir, release)
	if err != nil {
		t.Fatal(err)
	}
	if k := kinds(objs); k["PrometheusRule"] != 0 || render.Find(objs, "ConfigMap", "accord-dashboard") != nil {
		t.Errorf("by default: %d PrometheusRules and dashboard ConfigMap %v, want none", k["PrometheusRule"], render.Find(objs, "ConfigMap", "accord-dashboard") != nil)
	}
	r := release
	r.Values = map[string]any{
		"prometheusRule":   map[string]any{"enabled": true, "labels": map[string]any{"release": "prom"}},
		"grafanaDashboard": map[string]any{"enabled": true, "namespace": "grafana"},
	}
	objs, err = render.Chart(chartDir, r)
	if err != nil {
		t.Fatal(err)
	}
	pr := render.Find(objs, "PrometheusRule", "accord")
	if pr == nil {
		t.Fatal("no PrometheusRule accord")
	}
	if pr.GetLabels()["release"] != "prom" {
		t.Errorf("PrometheusRule labels %v, want release=prom among them", pr.GetLabels())
	}
	var want map[string]any
	if err := yaml.Unmarshal(monitoring.Rules, &want); err != nil {
		t.Fatalf("rules file: %v", err)
	}
	spec, _, _ := unstructured.NestedFieldNoCopy(pr.Object, "spec")
	if !equality.Semantic.DeepEqual(spec, want) {
		t.Errorf("the PrometheusRule's spec is not manifests/monitoring/%s", monitoring.RulesFile)
	}
	cm := render.Find(objs, "ConfigMap", "accord-dashboard")
	if cm == nil {
		t.Fatal("no ConfigMap accord-dashboard")
	}
	if cm.GetNamespace() != "grafana" || cm.GetLabels()["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap in %q with labels %v, want namespace grafana and grafana_dashboard=1", cm.GetNamespace(), cm.GetLabels())
	}
	data, err := render.ConfigMapData(objs, "accord-dashboard", monitoring.DashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	if data+"\n" != string(monitoring.DashboardJSON) {
		t.Errorf("the ConfigMap's %s is not manifests/monitoring's", monitoring.DashboardFile)
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
	loadReporter(t, base, "accord-metrics-reporter-config")
	reporterRBAC(t, base, "accord-metrics-reporter")
	consoleRBAC(t, base, "accord-console")

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
	if want := []string{"registry.example.com/accord/accord-console:v0.1.0", "registry.example.com/accord/accord-descheduler:v0.1.0", "registry.example.com/accord/accord-metrics-reporter:v0.1.0", "registry.example.com/accord/accord-scheduler:v0.1.0"}; !slices.Equal(images, want) {
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

// TestChartDisruptionValues: the budgets, a window, evictionMode Soft and evictionsInBackground
// render into a policy the descheduler loads (with those fields) and its feature gate flag; a bad
// mode names its field.
func TestChartDisruptionValues(t *testing.T) {
	r := release
	r.Values = map[string]any{"descheduler": map[string]any{
		"limits":                map[string]any{"maxNoOfPodsToEvictPerNode": 1, "maxMigratingPerWorkload": "10%", "maxUnavailablePerWorkload": 2, "evictSingleReplicaWorkloads": true},
		"evictionWindows":       []any{map[string]any{"days": []any{"Mon-Fri"}, "start": "01:00", "end": "05:00", "timeZone": "Europe/Berlin"}},
		"evictionMode":          "Soft",
		"evictionsInBackground": true,
	}}
	objs, err := render.Chart(chartDir, r)
	if err != nil {
		t.Fatal(err)
	}
	pol := loadBoth(t, objs, "accord-scheduler-config", "accord-descheduler-policy")
	for _, want := range []string{"evictionMode: Soft", "maxMigratingPerWorkload: 10%", "maxUnavailablePerWorkload: 2", "evictSingleReplicaWorkloads: true", "timeZone: Europe/Berlin"} {
		if !strings.Contains(pol, want) {
			t.Errorf("policy lacks %q:\n%s", want, pol)
		}
	}
	dep := render.Find(objs, "Deployment", "accord-descheduler")
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	if args := fmt.Sprint(containers[0].(map[string]any)["args"]); !strings.Contains(args, "--feature-gates=EvictionsInBackground=true") {
		t.Errorf("descheduler args %s lack the EvictionsInBackground gate", args)
	}
	// The defaults render neither.
	objs, err = render.Chart(chartDir, release)
	if err != nil {
		t.Fatal(err)
	}
	pol, _ = render.ConfigMapData(objs, "accord-descheduler-policy", "policy.yaml")
	dep = render.Find(objs, "Deployment", "accord-descheduler")
	containers, _, _ = unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	if strings.Contains(pol, "evictionMode") || strings.Contains(fmt.Sprint(containers[0].(map[string]any)["args"]), "feature-gates") {
		t.Error("the defaults render evictionMode or a feature gate")
	}
	r.Values = map[string]any{"descheduler": map[string]any{"evictionMode": "Gentle"}}
	if _, err := render.Chart(chartDir, r); err == nil || !strings.Contains(err.Error(), "/descheduler/evictionMode") {
		t.Errorf("evictionMode Gentle: %v, want an error naming /descheduler/evictionMode", err)
	}
}

// TestDeschedulerGOMEMLIMIT: in the chart (with its default and with another memory limit) and in
// the kustomize base, accord-descheduler's container takes GOMEMLIMIT from its own limits.memory
// through the downward API, and has a memory limit for it to follow.
func TestDeschedulerGOMEMLIMIT(t *testing.T) {
	check := func(name string, objs []*unstructured.Unstructured, wantLimit string) {
		t.Helper()
		dep := render.Find(objs, "Deployment", "accord-descheduler")
		if dep == nil {
			t.Fatalf("%s: no Deployment accord-descheduler", name)
		}
		containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
		c := containers[0].(map[string]any)
		if limit, _, _ := unstructured.NestedString(c, "resources", "limits", "memory"); limit != wantLimit {
			t.Errorf("%s: limits.memory %q, want %q", name, limit, wantLimit)
		}
		env, _, _ := unstructured.NestedSlice(c, "env")
		var found bool
		for _, e := range env {
			e := e.(map[string]any)
			if e["name"] != "GOMEMLIMIT" {
				continue
			}
			found = true
			ref, _, _ := unstructured.NestedStringMap(e, "valueFrom", "resourceFieldRef")
			if ref["resource"] != "limits.memory" || ref["containerName"] != c["name"] || ref["divisor"] != "" || e["value"] != nil {
				t.Errorf("%s: GOMEMLIMIT is %v, want the downward API's limits.memory of container %v in bytes", name, e, c["name"])
			}
		}
		if !found {
			t.Errorf("%s: container %v has no GOMEMLIMIT (env %v)", name, c["name"], env)
		}
	}
	objs, err := render.Chart(chartDir, release)
	if err != nil {
		t.Fatal(err)
	}
	check("chart", objs, "512Mi")
	r := release
	r.Values = map[string]any{"descheduler": map[string]any{"resources": map[string]any{"limits": map[string]any{"memory": "2Gi"}}}}
	if objs, err = render.Chart(chartDir, r); err != nil {
		t.Fatal(err)
	}
	check("chart with limits.memory 2Gi", objs, "2Gi")
	base, err := render.Kustomize(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	check("kustomize base", base, "512Mi")
}
