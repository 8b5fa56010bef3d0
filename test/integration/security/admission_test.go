package security

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/manifests/render"
	"github.com/accord-sched/accord/pkg/descheduler/evictions"
	accordclient "github.com/accord-sched/accord/pkg/generated/clientset/versioned"
	"github.com/accord-sched/accord/test/harness"
)

// as returns a copy of the control plane's configuration impersonating user (authenticated).
func as(user string) *rest.Config {
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	return cfg
}

// grant creates a Role in ns with rules and binds it to user.
func grant(ctx context.Context, t *testing.T, ns, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	name := strings.NewReplacer("@", "-", ":", "-", ".", "-").Replace(user)
	if _, err := env.Client.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}}
	if _, err := env.Client.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestPodMigrationNeedsTheRightToEvict installs the chart's ValidatingAdmissionPolicy
// accord-podmigration-eviction: a user who may create PodMigrations but not pods/eviction is refused
// with a message naming what is missing; a user who may do both is admitted.
func TestPodMigrationNeedsTheRightToEvict(t *testing.T) {
	ns := env.CreateNamespace(t, "migrate")
	objs, err := render.Chart(chartDir, render.Release{Name: ns, Namespace: ns, Values: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	apply(t, keep(objs, func(kind, name string) bool {
		return strings.HasPrefix(kind, "ValidatingAdmissionPolicy") && name == ns+"-accord-podmigration-eviction"
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	migrations := rbacv1.PolicyRule{APIGroups: []string{"scheduling.accord.dev"}, Resources: []string{"podmigrations"}, Verbs: []string{"create", "get", "list"}}
	evict := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/eviction"}, Verbs: []string{"create"}}
	grant(ctx, t, ns, "migrator@example.com", migrations)
	grant(ctx, t, ns, "evictor@example.com", migrations, evict)

	create := func(user, pod string) error {
		cfg := as(user)
		cfg.ContentType, cfg.AcceptContentTypes = "application/json", "application/json"
		c, err := accordclient.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.SchedulingV1alpha1().PodMigrations(ns).Create(ctx, &schedv1alpha1.PodMigration{ObjectMeta: metav1.ObjectMeta{GenerateName: "m-"},
			Spec: schedv1alpha1.PodMigrationSpec{PodName: pod}}, metav1.CreateOptions{})
		return err
	}
	// The bindings and the policy take effect within a second or two of their creation: until then
	// the refusal may be RBAC's ("cannot create resource") rather than the policy's, so wait for the
	// policy's own words (an admission, or a refusal that never names the policy, fails after 30 s).
	want := "migrator@example.com may not create a PodMigration of pod web-0: it needs create on pods/eviction in namespace " + ns
	var refused error
	if err := harness.WaitFor(ctx, 30*time.Second, func(context.Context) (bool, error) {
		refused = create("migrator@example.com", "web-0")
		return refused != nil && apierrors.IsForbidden(refused) && strings.Contains(refused.Error(), want), nil
	}); err != nil {
		t.Fatalf("a PodMigration by a user who may not evict: after 30 s the answer is %v, want a 403 saying %q", refused, want)
	}
	var admitted error
	if err := harness.WaitFor(ctx, 30*time.Second, func(context.Context) (bool, error) {
		admitted = create("evictor@example.com", "web-0")
		return admitted == nil, nil
	}); err != nil {
		t.Errorf("a PodMigration by a user who may evict is still refused after 30 s: %v", admitted)
	}
	t.Logf("PodMigration by a user without create on pods/eviction: %v; by one with it: admitted", refused)
}

// TestOnlyTheDeschedulerMarksPods installs the chart's ValidatingAdmissionPolicy
// accord-descheduler-marks: a tenant allowed to patch and create its pods may not set, change or
// remove a descheduler.accord.dev/ annotation (with any field manager, the descheduler's name
// included), may still write its other annotations, and the descheduler's ServiceAccount may.
func TestOnlyTheDeschedulerMarksPods(t *testing.T) {
	ns := env.CreateNamespace(t, "marks")
	tenantNS := env.CreateNamespace(t, "tenant")
	objs, err := render.Chart(chartDir, render.Release{Name: ns, Namespace: ns, Values: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	apply(t, keep(objs, func(kind, name string) bool {
		return strings.HasPrefix(kind, "ValidatingAdmissionPolicy") && name == ns+"-accord-descheduler-marks"
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tenant := "tenant@example.com"
	deschedulerSA := "system:serviceaccount:" + ns + ":" + ns + "-accord-descheduler"
	podRights := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "create", "patch", "update"}}
	grant(ctx, t, tenantNS, tenant, podRights)
	grant(ctx, t, tenantNS, deschedulerSA, podRights)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: tenantNS},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}}}
	if _, err := env.Client.CoreV1().Pods(tenantNS).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	client := func(user string) kubernetes.Interface {
		c, err := kubernetes.NewForConfig(as(user))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// annotate sets key to value (nil: removes it) as user, writing as field manager manager.
	annotateOpts := func(user, key string, value *string, opts metav1.PatchOptions) error {
		body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: value}}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = client(user).CoreV1().Pods(tenantNS).Patch(ctx, "app", types.MergePatchType, body, opts)
		return err
	}
	annotate := func(user, manager, key string, value *string) error {
		return annotateOpts(user, key, value, metav1.PatchOptions{FieldManager: manager})
	}
	mark := ptr.To(`{"time":"2026-01-01T00:00:00Z","profile":"accord"}`)
	// The binding takes effect within a second or two: probe with dry runs (admission runs, nothing
	// is written).
	if err := harness.WaitFor(ctx, 30*time.Second, func(context.Context) (bool, error) {
		return annotateOpts(tenant, evictions.SoftEvictionAnnotation, mark, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}) != nil, nil
	}); err != nil {
		t.Fatalf("the tenant's soft-eviction mark is still admitted after 30 s: %v", err)
	}
	refused := annotate(tenant, "kubectl-annotate", evictions.SoftEvictionAnnotation, mark)
	if refused == nil {
		t.Fatal("the tenant's soft-eviction mark is admitted once the dry runs are refused")
	}
	if !apierrors.IsForbidden(refused) || !strings.Contains(refused.Error(), "only "+ns+"-accord-descheduler may set, change or remove the descheduler.accord.dev/ annotations of a pod") {
		t.Errorf("refusal = %v", refused)
	}
	// The descheduler's field manager name does not help.
	if err := annotate(tenant, evictions.FieldManager, evictions.SoftEvictionAnnotation, mark); !apierrors.IsForbidden(err) {
		t.Errorf("the tenant writing as field manager %s: %v, want 403", evictions.FieldManager, err)
	}
	// A pod created with a mark.
	forged := pod.DeepCopy()
	forged.Name, forged.Annotations = "forged", map[string]string{evictions.SoftEvictionAnnotation: *mark}
	if _, err := client(tenant).CoreV1().Pods(tenantNS).Create(ctx, forged, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the tenant creating a pod with a mark: %v, want 403", err)
	}
	if err := annotate(tenant, "kubectl-annotate", "example.com/owner", ptr.To("team-a")); err != nil {
		t.Errorf("the tenant's own annotation is refused: %v", err)
	}
	// The descheduler sets the mark; the tenant may neither change nor remove it; the descheduler
	// removes it.
	if err := annotate(deschedulerSA, evictions.FieldManager, evictions.SoftEvictionAnnotation, mark); err != nil {
		t.Fatalf("the descheduler's mark is refused: %v", err)
	}
	if err := annotate(tenant, "kubectl-annotate", evictions.SoftEvictionAnnotation, ptr.To(`{"profile":"other"}`)); !apierrors.IsForbidden(err) {
		t.Errorf("the tenant changing the descheduler's mark: %v, want 403", err)
	}
	if err := annotate(tenant, "kubectl-annotate", evictions.SoftEvictionAnnotation, nil); !apierrors.IsForbidden(err) {
		t.Errorf("the tenant removing the descheduler's mark: %v, want 403", err)
	}
	if err := annotate(tenant, "kubectl-annotate", "example.com/owner", ptr.To("team-b")); err != nil {
		t.Errorf("the tenant's own annotation is refused on a marked pod: %v", err)
	}
	if err := annotate(deschedulerSA, evictions.FieldManager, evictions.SoftEvictionAnnotation, nil); err != nil {
		t.Errorf("the descheduler removing its mark is refused: %v", err)
	}
	t.Logf("tenant's mark: %v", refused)
}
