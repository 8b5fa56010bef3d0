package descheduler_test

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/accord-sched/accord/pkg/descheduler/app"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
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

// checkPolicy loads a policy as accord-descheduler does, given accord-scheduler's configuration
// (schedulerConfig, may be empty): the args shared with the scheduler come from it.
func checkPolicy(t *testing.T, name string, data []byte, schedulerConfig string) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	schedFile := ""
	if schedulerConfig != "" {
		schedFile = filepath.Join(dir, "scheduler-config.yaml")
		if err := os.WriteFile(schedFile, []byte(schedulerConfig), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p, _, err := runner.LoadPolicy(file, schedFile)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if p.MaxNoOfPodsToEvictTotal == nil || p.MaxNoOfPodsToEvictPerNode == nil {
		t.Errorf("%s: shipped policies set explicit limits", name)
	}
}

func TestPolicies(t *testing.T) {
	objs := objects(t, "configmap.yaml")
	cm, ok := objs[0].(*corev1.ConfigMap)
	if !ok || len(objs) != 1 {
		t.Fatalf("configmap.yaml holds %v", objs)
	}
	// The in-cluster policy leaves the shared args to accord-scheduler's ConfigMap.
	schedObjs := objects(t, "../scheduler/configmap.yaml")
	schedCM, ok := schedObjs[0].(*corev1.ConfigMap)
	if !ok {
		t.Fatalf("../scheduler/configmap.yaml holds %T", schedObjs[0])
	}
	checkPolicy(t, "configmap.yaml policy.yaml", []byte(cm.Data["policy.yaml"]), schedCM.Data["scheduler-config.yaml"])
	data, err := os.ReadFile("playground-policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	checkPolicy(t, "playground-policy.yaml", data, "")
	// The playground's policy agrees with the scheduler configuration the playground runs.
	sched, err := os.ReadFile("../scheduler/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	checkPolicy(t, "playground-policy.yaml", data, string(sched))
}

func TestDeploymentArgsParse(t *testing.T) {
	objs := objects(t, "deployment.yaml")
	d, ok := objs[0].(*appsv1.Deployment)
	if !ok {
		t.Fatalf("deployment.yaml holds %T", objs[0])
	}
	c := d.Spec.Template.Spec.Containers[0]
	cmd := app.NewDeschedulerCommand()
	if err := cmd.ParseFlags(c.Args); err != nil {
		t.Fatalf("args %v: %v", c.Args, err)
	}
	for _, want := range []string{"--leader-elect=true", "--policy-config-file=/policy-dir/policy.yaml", "--scheduler-config-file=/etc/accord-scheduler/scheduler-config.yaml"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("missing %s", want)
		}
	}
	if d.Spec.Template.Spec.ServiceAccountName != "accord-descheduler" || d.Spec.Template.Spec.Volumes[0].ConfigMap.Name != "accord-descheduler-policy" {
		t.Error("deployment does not use the service account and the policy ConfigMap")
	}
	if vs := d.Spec.Template.Spec.Volumes; len(vs) < 2 || vs[1].ConfigMap == nil || vs[1].ConfigMap.Name != "accord-scheduler-config" {
		t.Error("deployment does not mount accord-scheduler's ConfigMap for the scheduler simulation")
	}
}

func TestRBACIsLeastPrivilege(t *testing.T) {
	var cluster *rbacv1.ClusterRole
	var lease, token *rbacv1.Role
	for _, o := range objects(t, "rbac.yaml") {
		switch r := o.(type) {
		case *rbacv1.ClusterRole:
			cluster = r
		case *rbacv1.Role:
			switch r.Name {
			case "accord-descheduler-leader-election":
				lease = r
			case "accord-descheduler-prometheus-token":
				token = r
			}
		}
	}
	// The Prometheus token Secret: that one Secret, read-only.
	if token == nil || len(token.Rules) != 1 || len(token.Rules[0].ResourceNames) != 1 || slices.Contains(token.Rules[0].Verbs, "create") {
		t.Errorf("the Prometheus token Role must grant reading one named Secret: %+v", token)
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
		{"", "nodes", "list"}, {"", "pods", "watch"}, {"", "namespaces", "list"}, {"", "pods/eviction", "create"},
		{"policy", "poddisruptionbudgets", "watch"}, {"scheduling.k8s.io", "priorityclasses", "list"},
		{"scheduling.accord.dev", "clusterscopedresources", "watch"}, {"slo.accord.dev", "nodemetrics", "watch"},
		{"events.k8s.io", "events", "create"},
		// ReservationFirst creates its reservations and deletes those it does not use.
		{"scheduling.accord.dev", "reservations", "create"}, {"scheduling.accord.dev", "reservations", "delete"},
		// The PodMigration controller: reads migrations, writes their status, deletes finished ones
		// past their ttlSecondsAfterFinished.
		{"scheduling.accord.dev", "podmigrations", "watch"}, {"scheduling.accord.dev", "podmigrations/status", "update"},
		{"scheduling.accord.dev", "podmigrations", "delete"},
		{"metrics.k8s.io", "nodes", "list"}, {"metrics.k8s.io", "pods", "get"},
		// The simulated kube-scheduler plugins.
		{"", "services", "watch"}, {"apps", "replicasets", "watch"}, {"", "persistentvolumeclaims", "watch"},
		{"storage.k8s.io", "csinodes", "watch"}, {"resource.k8s.io", "resourceclaims", "watch"},
		{"resource.k8s.io", "resourceslices", "watch"}, {"resource.k8s.io", "deviceclasses", "watch"},
	} {
		if !allows(cluster.Rules, need[0], need[1], need[2]) {
			t.Errorf("ClusterRole lacks %v", need)
		}
	}
	for _, r := range cluster.Rules {
		for _, v := range r.Verbs {
			// The only deletes: ReservationFirst's own reservations, and finished PodMigrations past
			// their ttlSecondsAfterFinished.
			ownReservations := v == "delete" && len(r.Resources) == 1 && (r.Resources[0] == "reservations" || r.Resources[0] == "podmigrations")
			if ownReservations {
				continue
			}
			if v == "*" || v == "delete" || v == "deletecollection" || (v != "create" && v != "patch" && v != "update" && v != "get" && v != "list" && v != "watch") {
				t.Errorf("ClusterRole grants %q on %v", v, r.Resources)
			}
		}
		if slices.Contains(r.Resources, "*") || (slices.Contains(r.Resources, "pods") && slices.ContainsFunc(r.Verbs, func(v string) bool { return v != "get" && v != "list" && v != "watch" && v != "patch" })) {
			t.Errorf("ClusterRole rule too broad: %+v", r)
		}
	}
	if !allows(lease.Rules, "coordination.k8s.io", "leases", "update") {
		t.Error("Role cannot renew the Lease")
	}
	// The base's policy has no Soft profile: no write to pods. The soft-eviction component grants
	// patch (and nothing else) on pods.
	if allows(cluster.Rules, "", "pods", "patch") {
		t.Error("the base ClusterRole grants patch on pods, which only evictionMode Soft needs (components/soft-eviction)")
	}
	var soft *rbacv1.ClusterRole
	for _, o := range objects(t, "../components/soft-eviction/rbac.yaml") {
		if cr, ok := o.(*rbacv1.ClusterRole); ok {
			soft = cr
		}
	}
	if soft == nil || len(soft.Rules) != 1 || !allows(soft.Rules, "", "pods", "patch") || len(soft.Rules[0].Verbs) != 1 || len(soft.Rules[0].Resources) != 1 {
		t.Errorf("components/soft-eviction must grant patch on pods and nothing else: %+v", soft)
	}
}
