package metricsreporter_test

import (
	"bufio"
	"bytes"
	"os"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/accord-sched/accord/pkg/metricsreporter"
	"github.com/accord-sched/accord/pkg/metricsreporter/app"
)

// objects decodes every document of a manifest strictly.
func objects(t *testing.T, file string) []runtime.Object {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	decoder := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []runtime.Object
	for {
		doc, err := reader.Read()
		if err != nil {
			break
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		out = append(out, obj)
	}
	return out
}

func TestConfigMap(t *testing.T) {
	objs := objects(t, "configmap.yaml")
	cm, ok := objs[0].(*corev1.ConfigMap)
	if !ok || len(objs) != 1 {
		t.Fatalf("configmap.yaml holds %v", objs)
	}
	cfg, err := metricsreporter.DecodeConfig([]byte(cm.Data["config.yaml"]))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Statistic != "p95" {
		t.Errorf("statistic %q, want the shipped p95", cfg.Statistic)
	}
}

func TestDeployment(t *testing.T) {
	objs := objects(t, "deployment.yaml")
	d, ok := objs[0].(*appsv1.Deployment)
	if !ok {
		t.Fatalf("deployment.yaml holds %T", objs[0])
	}
	c := d.Spec.Template.Spec.Containers[0]
	cmd := app.NewCommand()
	if err := cmd.ParseFlags(c.Args); err != nil {
		t.Fatalf("args %v: %v", c.Args, err)
	}
	for _, want := range []string{"--leader-elect=true", "--leader-elect-resource-name=accord-metrics-reporter", "--config=/etc/accord-metrics-reporter/config.yaml"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("missing %s", want)
		}
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Error("probes must be /healthz and /readyz")
	}
	spec := d.Spec.Template.Spec
	if spec.ServiceAccountName != "accord-metrics-reporter" || spec.Volumes[0].ConfigMap == nil || spec.Volumes[0].ConfigMap.Name != "accord-metrics-reporter-config" {
		t.Error("deployment does not use the service account and the config ConfigMap")
	}
}

func TestRBAC(t *testing.T) {
	var cluster *rbacv1.ClusterRole
	var lease *rbacv1.Role
	for _, o := range objects(t, "rbac.yaml") {
		switch r := o.(type) {
		case *rbacv1.ClusterRole:
			cluster = r
		case *rbacv1.Role:
			lease = r
		}
	}
	if cluster == nil || lease == nil {
		t.Fatal("missing ClusterRole or Role")
	}
	allows := func(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
		for _, r := range rules {
			if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
				return true
			}
		}
		return false
	}
	for _, need := range [][3]string{
		{"", "nodes", "watch"}, {"", "pods", "watch"}, {"metrics.k8s.io", "nodes", "list"}, {"metrics.k8s.io", "pods", "list"},
		{"slo.accord.dev", "nodemetrics", "create"}, {"slo.accord.dev", "nodemetrics", "watch"}, {"slo.accord.dev", "nodemetrics/status", "patch"},
	} {
		if !allows(cluster.Rules, need[0], need[1], need[2]) {
			t.Errorf("ClusterRole lacks %v", need)
		}
	}
	for _, r := range cluster.Rules {
		if slices.Contains(r.Resources, "*") || slices.Contains(r.Verbs, "*") {
			t.Errorf("ClusterRole rule too broad: %+v", r)
		}
		if (slices.Contains(r.Resources, "pods") || slices.Contains(r.Resources, "nodes")) && slices.ContainsFunc(r.Verbs, func(v string) bool { return v != "get" && v != "list" && v != "watch" }) {
			t.Errorf("ClusterRole writes nodes or pods: %+v", r)
		}
	}
	if !allows(lease.Rules, "coordination.k8s.io", "leases", "update") {
		t.Error("Role cannot renew the Lease")
	}
}
