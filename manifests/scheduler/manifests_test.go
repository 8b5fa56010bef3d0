// Package scheduler_test checks the accord-scheduler manifests: every YAML file decodes strictly,
// the scheduler configurations load through kube-scheduler's real config loader (with Accord's
// args registered) and validate, and the pieces refer to each other consistently.
package scheduler_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedvalidation "k8s.io/kubernetes/pkg/scheduler/apis/config/validation"

	"github.com/accord-sched/accord/apis/config"
	_ "github.com/accord-sched/accord/apis/config/scheme"
)

// objects decodes every document of every YAML file in this directory strictly with client-go's
// scheme (KubeSchedulerConfiguration files are loaded separately).
func objects(t *testing.T) map[string][]runtime.Object {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests found: %v", err)
	}
	decoder := serializer.NewCodecFactory(clientgoscheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	out := map[string][]runtime.Object{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, []byte("kind: KubeSchedulerConfiguration\n")) && !bytes.Contains(data, []byte("kind: ConfigMap")) {
			continue
		}
		reader := utilyaml.NewYAMLReader(bufioReader(data))
		for {
			doc, err := reader.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			obj, _, err := decoder.Decode(doc, nil, nil)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out[f] = append(out[f], obj)
		}
	}
	return out
}

func loadConfig(t *testing.T, data []byte) *schedconfig.KubeSchedulerConfiguration {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := options.LoadConfigFromFile(klog.Background(), path)
	if err != nil {
		t.Fatalf("loading the scheduler configuration: %v", err)
	}
	if err := schedvalidation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		t.Fatalf("validating the scheduler configuration: %v", err)
	}
	return cfg
}

// checkProfile checks the accord-scheduler profile: both plugins enabled with Accord's args.
func checkProfile(t *testing.T, cfg *schedconfig.KubeSchedulerConfiguration) {
	t.Helper()
	if len(cfg.Profiles) != 1 || cfg.Profiles[0].SchedulerName != "accord-scheduler" {
		t.Fatalf("want one profile named accord-scheduler, got %+v", cfg.Profiles)
	}
	prof := cfg.Profiles[0]
	var enabled []string
	for _, p := range prof.Plugins.MultiPoint.Enabled {
		enabled = append(enabled, p.Name)
	}
	for _, want := range []string{"NodeCRDResourceFit", "LoadAware"} {
		if !slices.Contains(enabled, want) {
			t.Errorf("plugin %s is not enabled (multiPoint: %v)", want, enabled)
		}
	}
	var sawFit, sawLoad bool
	for _, pc := range prof.PluginConfig {
		switch a := pc.Args.(type) {
		case *config.NodeCRDResourceFitArgs:
			// missingCRPolicy and nodeMetricExpirationSeconds are the defaults (generated regions).
			sawFit = a.MissingCRPolicy == config.DefaultMissingCRPolicy
		case *config.LoadAwareArgs:
			sawLoad = a.UsageThresholds[corev1.ResourceCPU] == 80 && a.Expiration() == config.DefaultNodeMetricExpirationSeconds
		}
	}
	if !sawFit || !sawLoad {
		t.Errorf("plugin args not loaded as expected (NodeCRDResourceFit: %v, LoadAware: %v)", sawFit, sawLoad)
	}
	if cfg.ClientConnection.QPS < 100 || cfg.ClientConnection.Burst < 200 {
		t.Errorf("clientConnection qps/burst = %v/%d, want at least 100/200", cfg.ClientConnection.QPS, cfg.ClientConnection.Burst)
	}
}

func TestSampleConfigLoads(t *testing.T) {
	data, err := os.ReadFile("config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := loadConfig(t, data)
	checkProfile(t, cfg)
	if cfg.LeaderElection.LeaderElect {
		t.Error("config.yaml is for in-process and local runs: leader election must be off")
	}
}

func TestInClusterManifests(t *testing.T) {
	objs := objects(t)

	var cm *corev1.ConfigMap
	var sa *corev1.ServiceAccount
	var dep *appsv1.Deployment
	var pdb *policyv1.PodDisruptionBudget
	var clusterRoles []*rbacv1.ClusterRole
	var roles []*rbacv1.Role
	var crbs []*rbacv1.ClusterRoleBinding
	var rbs []*rbacv1.RoleBinding
	for _, list := range objs {
		for _, o := range list {
			switch o := o.(type) {
			case *corev1.ConfigMap:
				cm = o
			case *corev1.ServiceAccount:
				sa = o
			case *appsv1.Deployment:
				dep = o
			case *policyv1.PodDisruptionBudget:
				pdb = o
			case *rbacv1.ClusterRole:
				clusterRoles = append(clusterRoles, o)
			case *rbacv1.Role:
				roles = append(roles, o)
			case *rbacv1.ClusterRoleBinding:
				crbs = append(crbs, o)
			case *rbacv1.RoleBinding:
				rbs = append(rbs, o)
			default:
				t.Errorf("unexpected object %T", o)
			}
		}
	}
	if cm == nil || sa == nil || dep == nil || pdb == nil {
		t.Fatalf("missing ConfigMap (%v), ServiceAccount (%v), Deployment (%v) or PodDisruptionBudget (%v)", cm != nil, sa != nil, dep != nil, pdb != nil)
	}
	if pdb.Namespace != dep.Namespace || pdb.Spec.Selector.MatchLabels["app.kubernetes.io/name"] != dep.Spec.Selector.MatchLabels["app.kubernetes.io/name"] {
		t.Errorf("the PodDisruptionBudget does not select the Deployment's pods")
	}

	// The ConfigMap's configuration loads, with leader election on a Lease named after the scheduler.
	cfg := loadConfig(t, []byte(cm.Data["scheduler-config.yaml"]))
	checkProfile(t, cfg)
	le := cfg.LeaderElection
	if !le.LeaderElect || le.ResourceName != "accord-scheduler" || le.ResourceNamespace != sa.Namespace {
		t.Errorf("leader election = %+v, want on, Lease %s/accord-scheduler", le, sa.Namespace)
	}

	// The Deployment runs that configuration as the ServiceAccount, with probes.
	pod := dep.Spec.Template.Spec
	if pod.ServiceAccountName != sa.Name || dep.Namespace != sa.Namespace || cm.Namespace != sa.Namespace {
		t.Errorf("Deployment, ConfigMap and ServiceAccount disagree on name or namespace")
	}
	c := pod.Containers[0]
	mount := ""
	for _, m := range c.VolumeMounts {
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.ConfigMap != nil && v.ConfigMap.Name == cm.Name {
				mount = m.MountPath
			}
		}
	}
	if want := "--config=" + mount + "/scheduler-config.yaml"; mount == "" || !slices.Contains(c.Command, want) {
		t.Errorf("command %v does not pass %s", c.Command, want)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("liveness probe is not /healthz")
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("readiness probe is not /readyz")
	}

	// RBAC: kube-scheduler's roles, read-only CR access, and only its own Lease.
	bound := map[string]bool{}
	for _, b := range crbs {
		if len(b.Subjects) == 1 && b.Subjects[0].Name == sa.Name && b.Subjects[0].Namespace == sa.Namespace {
			bound[b.RoleRef.Name] = true
		}
	}
	for _, want := range []string{"system:kube-scheduler", "system:volume-scheduler", "accord-scheduler"} {
		if !bound[want] {
			t.Errorf("ServiceAccount is not bound to ClusterRole %s", want)
		}
	}
	crVerbs := map[string][]string{}
	for _, r := range clusterRoles {
		if r.Name != "accord-scheduler" {
			continue
		}
		for _, rule := range r.Rules {
			for _, res := range rule.Resources {
				crVerbs[res] = append(crVerbs[res], rule.Verbs...)
			}
		}
	}
	for _, res := range []string{"clusterscopedresources", "nodemetrics"} {
		slices.Sort(crVerbs[res])
		if !slices.Equal(crVerbs[res], []string{"get", "list", "watch"}) {
			t.Errorf("ClusterRole accord-scheduler grants %v on %s, want exactly get, list, watch", crVerbs[res], res)
		}
	}
	leaseOK := false
	for _, r := range roles {
		for _, rule := range r.Rules {
			if slices.Contains(rule.Resources, "leases") && slices.Contains(rule.Verbs, "update") {
				leaseOK = slices.Equal(rule.ResourceNames, []string{le.ResourceName})
			}
		}
	}
	if !leaseOK {
		t.Errorf("no Role limits Lease updates to %q", le.ResourceName)
	}
	roleBound := false
	for _, b := range rbs {
		if b.RoleRef.Name == "accord-scheduler-leader-election" && b.Subjects[0].Name == sa.Name {
			roleBound = true
		}
	}
	if !roleBound {
		t.Error("the leader-election Role is not bound to the ServiceAccount")
	}
}
