package security

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logsapi "k8s.io/component-base/logs/api/v1"

	"github.com/accord-sched/accord/manifests/render"
	deschedapp "github.com/accord-sched/accord/pkg/descheduler/app"
	reporterapp "github.com/accord-sched/accord/pkg/metricsreporter/app"
	"github.com/accord-sched/accord/test/harness"
)

// TestSecurePortsDelegateAuth runs accord-descheduler (with --profiling) and accord-metrics-reporter,
// each reviewing tokens with its own ServiceAccount's token and only the RBAC the chart ships for it
// (system:auth-delegator and the authentication reader), and calls their secure ports as: nobody (no
// credentials), a token the apiserver does not accept, a ServiceAccount without rights, a
// ServiceAccount the chart's metrics-reader ClusterRole is bound to (metricsReader.subjects), and one
// granted get on /debug/pprof/*. It asserts every status code and logs them as a table.
func TestSecurePortsDelegateAuth(t *testing.T) {
	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
	ns := env.CreateNamespace(t, "secure-ports")
	// The chart's objects, named after the namespace so that -count=2 gets fresh cluster-scoped ones.
	objs, err := render.Chart(chartDir, render.Release{Name: ns, Namespace: ns, Values: map[string]any{
		"metricsReader": map[string]any{"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "scraper", "namespace": ns}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	apply(t, keep(objs, func(kind, name string) bool {
		return kind == "ServiceAccount" || strings.HasSuffix(name, "-as-kube-scheduler") ||
			strings.HasSuffix(name, "-auth-delegator") || strings.HasSuffix(name, "-authentication-reader") || strings.HasSuffix(name, "-metrics-reader")
	}))
	// accord-scheduler's secure port is kube-scheduler's, which delegates the same way: the chart's
	// bindings (system:kube-scheduler, the authentication reader) must allow what that needs.
	schedulerSA := "system:serviceaccount:" + ns + ":" + ns + "-accord-scheduler"
	for _, attrs := range []authorizationv1.ResourceAttributes{
		{Verb: "create", Group: "authentication.k8s.io", Resource: "tokenreviews"},
		{Verb: "create", Group: "authorization.k8s.io", Resource: "subjectaccessreviews"},
		{Verb: "get", Resource: "configmaps", Namespace: "kube-system", Name: "extension-apiserver-authentication"},
	} {
		err := harness.WaitFor(context.Background(), 10*time.Second, func(ctx context.Context) (bool, error) {
			sar, err := env.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: schedulerSA, Groups: []string{"system:serviceaccounts", "system:authenticated"}, ResourceAttributes: &attrs}}, metav1.CreateOptions{})
			return err == nil && sar.Status.Allowed, err
		})
		if err != nil {
			t.Errorf("the chart's accord-scheduler ServiceAccount may not %s %s.%s %s: %v", attrs.Verb, attrs.Resource, attrs.Group, attrs.Name, err)
		}
	}
	// What an operator grants whoever takes profiles.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	profiler := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns + "-pprof"}, Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/debug/pprof/*"}, Verbs: []string{"get"}}}}
	if _, err := env.Client.RbacV1().ClusterRoles().Create(ctx, profiler, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-pprof"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: profiler.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "profiler", Namespace: ns}}}
	if _, err := env.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
		_ = env.Client.RbacV1().ClusterRoles().Delete(context.Background(), profiler.Name, metav1.DeleteOptions{})
	})

	dir := t.TempDir()
	admin := filepath.Join(dir, "admin.kubeconfig")
	if err := env.WriteKubeconfig(admin); err != nil {
		t.Fatal(err)
	}
	policy := writePolicy(t)
	deschedAuth := tokenKubeconfig(t, serviceAccountToken(t, ns, ns+"-accord-descheduler"))
	reporterAuth := tokenKubeconfig(t, serviceAccountToken(t, ns, ns+"-accord-metrics-reporter"))
	deschedPort, reporterPort := harness.FreePort(t), harness.FreePort(t)
	run := func(name string, execute func(context.Context) error) {
		done := make(chan error, 1)
		go func() { done <- execute(ctx) }()
		t.Cleanup(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("%s: %v", name, err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("%s did not return within 30s of its cancel", name)
			}
		})
	}
	run("accord-descheduler", func(ctx context.Context) error {
		cmd := deschedapp.NewDeschedulerCommand()
		cmd.SetArgs([]string{"--policy-config-file=" + policy, "--kubeconfig=" + admin, "--descheduling-interval=1h", "--dry-run",
			"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", deschedPort), "--profiling",
			"--authentication-kubeconfig=" + deschedAuth, "--authorization-kubeconfig=" + deschedAuth})
		cmd.SetOut(io.Discard)
		return cmd.ExecuteContext(ctx)
	})
	run("accord-metrics-reporter", func(ctx context.Context) error {
		cmd := reporterapp.NewCommand()
		cmd.SetArgs([]string{"--kubeconfig=" + admin, "--leader-elect=false",
			"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", reporterPort),
			"--authentication-kubeconfig=" + reporterAuth, "--authorization-kubeconfig=" + reporterAuth})
		cmd.SetOut(io.Discard)
		return cmd.ExecuteContext(ctx)
	})

	callers := []struct{ name, token string }{
		{"none", ""},
		{"bad token", "not-a-token"},
		{"SA without rights", serviceAccountToken(t, ns, "nobody")},
		{"SA bound to metrics-reader", serviceAccountToken(t, ns, "scraper")},
		{"SA granted /debug/pprof/*", serviceAccountToken(t, ns, "profiler")},
	}
	endpoints := []struct {
		name string
		port int
		path string
		want []int // per caller
	}{
		{"accord-descheduler", deschedPort, "/healthz", []int{200, 401, 200, 200, 200}},
		{"accord-descheduler", deschedPort, "/readyz", []int{200, 401, 200, 200, 200}},
		{"accord-descheduler", deschedPort, "/metrics", []int{401, 401, 403, 200, 403}},
		{"accord-descheduler", deschedPort, "/debug/pprof/heap", []int{401, 401, 403, 403, 200}},
		{"accord-metrics-reporter", reporterPort, "/healthz", []int{200, 401, 200, 200, 200}},
		{"accord-metrics-reporter", reporterPort, "/metrics", []int{401, 401, 403, 200, 403}},
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed serving certificates
	defer client.CloseIdleConnections()
	get := func(port int, path, token string) (int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d%s", port, path), nil)
		if err != nil {
			return 0, err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	// The descheduler once its caches have synced; the reporter has no metrics.k8s.io here to be
	// ready with, and is asked once it is alive.
	for _, w := range []struct {
		port int
		path string
	}{{deschedPort, "/readyz"}, {reporterPort, "/healthz"}} {
		t.Logf("Waiting up to 60s for %s on port %d", w.path, w.port)
		if err := harness.WaitFor(ctx, time.Minute, func(context.Context) (bool, error) {
			code, err := get(w.port, w.path, "")
			return err == nil && code == http.StatusOK, nil
		}); err != nil {
			t.Fatalf("port %d: %s: %v", w.port, w.path, err)
		}
	}
	var table strings.Builder
	fmt.Fprintf(&table, "\n| endpoint |")
	for _, c := range callers {
		fmt.Fprintf(&table, " %s |", c.name)
	}
	table.WriteString("\n|---|" + strings.Repeat("---|", len(callers)) + "\n")
	for _, e := range endpoints {
		fmt.Fprintf(&table, "| %s %s |", e.name, e.path)
		for i, c := range callers {
			code, err := get(e.port, e.path, c.token)
			if err != nil {
				t.Errorf("%s %s as %s: %v", e.name, e.path, c.name, err)
			} else if code != e.want[i] {
				t.Errorf("%s %s as %s = %d, want %d", e.name, e.path, c.name, code, e.want[i])
			}
			fmt.Fprintf(&table, " %d |", code)
		}
		table.WriteString("\n")
	}
	t.Log(table.String())
}
