package render_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/accord-sched/accord/manifests/render"
)

// patchesPods reports whether the ClusterRole grants patch on pods.
func patchesPods(t *testing.T, role *unstructured.Unstructured) bool {
	t.Helper()
	if role == nil {
		t.Fatal("no descheduler ClusterRole")
	}
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	for _, r := range rules {
		rule := r.(map[string]any)
		res, _, _ := unstructured.NestedStringSlice(rule, "resources")
		verbs, _, _ := unstructured.NestedStringSlice(rule, "verbs")
		for _, rs := range res {
			for _, v := range verbs {
				if rs == "pods" && v == "patch" {
					return true
				}
			}
		}
	}
	return false
}

// TestChartLeastPrivilegeFollowsConfiguration: the descheduler may patch pods only when its profile
// soft-evicts; the admission policies are rendered by default, with the release's names, and can be
// turned off; accord-scheduler serves no pprof.
func TestChartLeastPrivilegeFollowsConfiguration(t *testing.T) {
	for _, tc := range []struct {
		mode  string
		patch bool
	}{{"Evict", false}, {"Soft", true}} {
		r := release
		r.Values = map[string]any{"descheduler": map[string]any{"evictionMode": tc.mode}}
		objs, err := render.Chart(chartDir, r)
		if err != nil {
			t.Fatal(err)
		}
		if got := patchesPods(t, render.Find(objs, "ClusterRole", "accord-descheduler")); got != tc.patch {
			t.Errorf("evictionMode %s: patch on pods = %v, want %v", tc.mode, got, tc.patch)
		}
	}
	objs, err := render.Chart(chartDir, release)
	if err != nil {
		t.Fatal(err)
	}
	marks := render.Find(objs, "ValidatingAdmissionPolicy", "accord-descheduler-marks")
	if marks == nil || render.Find(objs, "ValidatingAdmissionPolicyBinding", "accord-descheduler-marks") == nil {
		t.Fatal("the marks policy or its binding is not rendered by default")
	}
	conds, _, _ := unstructured.NestedSlice(marks.Object, "spec", "matchConditions")
	if want := "request.userInfo.username != 'system:serviceaccount:accord-system:accord-descheduler'"; len(conds) != 1 || conds[0].(map[string]any)["expression"] != want {
		t.Errorf("the marks policy exempts %v, want %q", conds, want)
	}
	if render.Find(objs, "ValidatingAdmissionPolicy", "accord-podmigration-eviction") == nil || render.Find(objs, "ValidatingAdmissionPolicyBinding", "accord-podmigration-eviction") == nil {
		t.Error("the PodMigration policy or its binding is not rendered by default")
	}
	r := release
	r.Values = map[string]any{"admissionPolicies": map[string]any{"deschedulerMarks": false, "podMigrationEviction": false}}
	off, err := render.Chart(chartDir, r)
	if err != nil {
		t.Fatal(err)
	}
	if k := kinds(off); k["ValidatingAdmissionPolicy"] != 0 || k["ValidatingAdmissionPolicyBinding"] != 0 {
		t.Errorf("admissionPolicies off still renders %v", k)
	}
	sched, err := render.ConfigMapData(objs, "accord-scheduler-config", "scheduler-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !containsLine(sched, "enableProfiling: false") {
		t.Errorf("accord-scheduler's configuration does not turn pprof off:\n%s", sched)
	}
	base, err := render.Kustomize(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	if patchesPods(t, render.Find(base, "ClusterRole", "accord-descheduler")) || render.Find(base, "ClusterRole", "accord-descheduler-soft-eviction") != nil {
		t.Error("the kustomize base grants patch on pods without the soft-eviction component")
	}
	for _, name := range []string{"accord-descheduler-marks", "accord-podmigration-eviction"} {
		if render.Find(base, "ValidatingAdmissionPolicy", name) == nil || render.Find(base, "ValidatingAdmissionPolicyBinding", name) == nil {
			t.Errorf("the kustomize base lacks the policy %s or its binding", name)
		}
	}
	// An overlay with the soft-eviction component: patch on pods, through its own ClusterRole.
	overlay := t.TempDir()
	abs, err := filepath.Abs(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(overlay, abs)
	if err != nil {
		t.Fatal(err)
	}
	kust := "resources: [" + rel + "]\ncomponents: [" + filepath.Join(rel, "components", "soft-eviction") + "]\n"
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kust), 0o644); err != nil {
		t.Fatal(err)
	}
	soft, err := render.Kustomize(overlay)
	if err != nil {
		t.Fatal(err)
	}
	if !patchesPods(t, render.Find(soft, "ClusterRole", "accord-descheduler-soft-eviction")) || render.Find(soft, "ClusterRoleBinding", "accord-descheduler-soft-eviction") == nil {
		t.Error("the soft-eviction component does not grant patch on pods to the descheduler")
	}
	baseSched, err := render.ConfigMapData(base, "accord-scheduler-config", "scheduler-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !containsLine(baseSched, "enableProfiling: false") {
		t.Errorf("the base's accord-scheduler configuration does not turn pprof off:\n%s", baseSched)
	}
}

func containsLine(doc, line string) bool {
	return slices.Contains(strings.Split(doc, "\n"), line)
}
