// Package metricsrbac checks, on a control plane that authorizes with RBAC, the rules
// manifests/descheduler/rbac.yaml gives accord-descheduler for its metricsProviders.
package metricsrbac

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/accord-sched/accord/test/harness"
)

var env *harness.Env

func TestMain(m *testing.M) {
	harness.Main(m, &env, harness.Options{APIServerFlags: []string{"--authorization-mode=RBAC"}, WithoutControllers: true, WithoutNodeSimulator: true})
}

// manifestRole returns the Role of rbac.yaml with the given name.
func manifestRole(t *testing.T, name string) *rbacv1.Role {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "manifests", "descheduler", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var r rbacv1.Role
		if err := yaml.Unmarshal([]byte(doc), &r); err == nil && r.Kind == "Role" && r.Name == name {
			return &r
		}
	}
	t.Fatalf("no Role %s in rbac.yaml", name)
	return nil
}

// TestPrometheusTokenSecretRole: the descheduler's list and watch of the token Secret (with the
// metadata.name field selector its informer sends) are authorized by the manifest's Role, which
// names the Secret in resourceNames; nothing else in the namespace is readable with it.
func TestPrometheusTokenSecretRole(t *testing.T) {
	ctx := context.Background()
	ns := env.CreateNamespace(t, "token-rbac")
	role := manifestRole(t, "accord-descheduler-prometheus-token")
	name := role.Rules[0].ResourceNames[0]
	for _, n := range []string{name, "other"} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n}, Data: map[string][]byte{"prometheusAuthToken": []byte("x")}}
		if _, err := env.Client.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	const user = "token-reader"
	role.Namespace, role.ResourceVersion = ns, ""
	if _, err := env.Client.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}}}
	if _, err := env.Client.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	one := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
	// The authorizer's cache takes a moment to see the new binding.
	var last error
	if err := harness.WaitFor(ctx, 10*time.Second, func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Secrets(ns).List(ctx, one)
		last = err
		return err == nil && len(list.Items) == 1, nil
	}); err != nil {
		t.Fatalf("list of the named Secret not allowed: %v", last)
	}
	w, err := client.CoreV1().Secrets(ns).Watch(ctx, one)
	if err != nil {
		t.Fatalf("watch of the named Secret: %v", err)
	}
	w.Stop()
	if _, err := client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("listing every Secret: %v, want forbidden", err)
	}
	if _, err := client.CoreV1().Secrets(ns).Get(ctx, "other", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("reading another Secret: %v, want forbidden", err)
	}
}
