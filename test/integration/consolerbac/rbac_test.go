// Package consolerbac checks accord-console's shipped RBAC on a control plane that authorizes with
// RBAC: impersonating the console's ServiceAccount (the kustomize base and the Helm chart's, with
// console.enabled), the real console syncs its caches and runs explain, and the ServiceAccount can
// create, update, patch or delete nothing (pods/eviction included).
package consolerbac

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/manifests/render"
	"github.com/accord-sched/accord/pkg/console"
	"github.com/accord-sched/accord/test/harness"
)

var env *harness.Env

func TestMain(m *testing.M) {
	harness.Main(m, &env, harness.Options{APIServerFlags: []string{"--authorization-mode=RBAC"}, WithoutControllers: true, WithoutNodeSimulator: true})
}

const (
	chartDir = "../../../manifests/charts/accord"
	baseDir  = "../../../manifests"
)

func TestKustomizeConsoleRBAC(t *testing.T) {
	objs, err := render.Kustomize(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	cfg, policy, sched := check(t, objs, "kube-system", "accord-console", "accord-descheduler-policy", "accord-scheduler-config")
	runBinary(t, cfg, objs, policy, sched)
}

func TestHelmChartConsoleRBAC(t *testing.T) {
	const ns = "accord-console-helm"
	objs, err := render.Chart(chartDir, render.Release{Name: "crbac", Namespace: ns, Values: map[string]any{"console": map[string]any{"enabled": true}}})
	if err != nil {
		t.Fatal(err)
	}
	check(t, objs, ns, "crbac-accord-console", "crbac-accord-descheduler-policy", "crbac-accord-scheduler-config")
}

// check creates the console's ServiceAccount, ClusterRole and binding from objs and tests them.
// It returns the impersonating client configuration and the files of the shipped policy and
// scheduler configuration.
func check(t *testing.T, objs []*unstructured.Unstructured, ns, sa, policyCM, schedulerCM string) (*rest.Config, string, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	role := typed[rbacv1.ClusterRole](t, objs, "ClusterRole", sa)
	binding := typed[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding", sa)
	account := typed[corev1.ServiceAccount](t, objs, "ServiceAccount", sa)
	for _, r := range role.Rules {
		for _, v := range r.Verbs {
			if v != "get" && v != "list" && v != "watch" {
				t.Errorf("ClusterRole %s grants %q on %v %v: the console is read-only", role.Name, v, r.APIGroups, r.Resources)
			}
		}
	}
	create(ctx, t, env.Client.CoreV1().ServiceAccounts(ns).Create, account, func() error {
		return env.Client.CoreV1().ServiceAccounts(ns).Delete(context.Background(), account.Name, metav1.DeleteOptions{})
	})
	create(ctx, t, env.Client.RbacV1().ClusterRoles().Create, role, func() error {
		return env.Client.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
	create(ctx, t, env.Client.RbacV1().ClusterRoleBindings().Create, binding, func() error {
		return env.Client.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})
	// system:auth-delegator: the console reviews its users' tokens and rights.
	delegator := typed[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding", sa+"-auth-delegator")
	create(ctx, t, env.Client.RbacV1().ClusterRoleBindings().Create, delegator, func() error {
		return env.Client.RbacV1().ClusterRoleBindings().Delete(context.Background(), delegator.Name, metav1.DeleteOptions{})
	})

	user := "system:serviceaccount:" + ns + ":" + sa
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
	imp, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The authorizer's cache takes a moment to see the new binding.
	if err := harness.WaitFor(ctx, 10*time.Second, func(ctx context.Context) (bool, error) {
		_, err := imp.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("%s cannot list nodes under the shipped ClusterRole: %v", user, err)
	}

	// Objects to write to.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-node"}}
	create(ctx, t, env.Client.CoreV1().Nodes().Create, node, func() error {
		return env.Client.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{})
	})
	csr := &schedv1alpha1.ClusterScopedResource{ObjectMeta: metav1.ObjectMeta{Name: node.Name},
		Spec: schedv1alpha1.ClusterScopedResourceSpec{ResourcesFilter: map[corev1.ResourceName]bool{"cpu": true}}}
	create(ctx, t, env.Accord.SchedulingV1alpha1().ClusterScopedResources().Create, csr, func() error {
		return env.Accord.SchedulingV1alpha1().ClusterScopedResources().Delete(context.Background(), csr.Name, metav1.DeleteOptions{})
	})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "victim"}, Spec: corev1.PodSpec{NodeName: node.Name,
		Containers: []corev1.Container{{Name: "c", Image: "pause"}}}}
	create(ctx, t, env.Client.CoreV1().Pods(ns).Create, pod, func() error {
		return env.Client.CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	})

	// The real console, as the ServiceAccount, with the shipped policy and scheduler configuration:
	// its caches sync (it may list and watch what it reads) and explain runs.
	policyFile, schedFile := configFiles(t, objs, policyCM, schedulerCM)
	runConsole(ctx, t, cfg, policyFile, schedFile)

	// It may write nothing: the playground's own controls, an eviction, a delete, all Forbidden.
	controls, err := console.NewClientControls(cfg)
	if err != nil {
		t.Fatal(err)
	}
	forbidden(t, "toggle a CR resource (playground control)", controls.SetResource(ctx, csr.Name, "cpu", false))
	forbidden(t, "set a node's simulated load (playground control)", controls.SetLoad(ctx, node.Name, 50, 50))
	forbidden(t, "evict a pod", imp.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod.Name}}))
	forbidden(t, "delete a pod", imp.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}))
	_, err = imp.CoreV1().Events(ns).Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod.Name}}, metav1.CreateOptions{})
	forbidden(t, "create an Event", err)
	_, err = imp.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	forbidden(t, "list Secrets", err)

	// And the authorizer agrees for every write verb on every resource it reads and more.
	denied := 0
	for _, res := range writeTargets(role) {
		for _, verb := range []string{"create", "update", "patch", "delete", "deletecollection"} {
			sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{User: user, Groups: cfg.Impersonate.Groups,
				ResourceAttributes: &authzv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: res.group, Resource: res.resource, Subresource: res.sub}}}
			got, err := env.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.Allowed {
				t.Errorf("%s may %s %s", user, verb, res)
			} else {
				denied++
			}
		}
	}
	t.Logf("%s: %d write checks denied by the authorizer", user, denied)
	return cfg, policyFile, schedFile
}

type target struct{ group, resource, sub string }

func (r target) String() string {
	s := r.resource
	if r.sub != "" {
		s += "/" + r.sub
	}
	if r.group != "" {
		s += "." + r.group
	}
	return s
}

// writeTargets are the resources of the role's rules plus the subresources and objects a console
// could be tempted to write.
func writeTargets(role *rbacv1.ClusterRole) []target {
	out := []target{{"", "pods", "eviction"}, {"", "pods", "binding"}, {"", "pods", "status"}, {"", "nodes", "status"},
		{"scheduling.accord.dev", "clusterscopedresources", "status"}, {"slo.accord.dev", "nodemetrics", "status"},
		{"", "configmaps", ""}, {"", "secrets", ""}, {"apps", "deployments", ""}, {"coordination.k8s.io", "leases", ""}, {"events.k8s.io", "events", ""}}
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				if t := (target{g, res, ""}); !slices.Contains(out, t) {
					out = append(out, t)
				}
			}
		}
	}
	return out
}

// configFiles writes the policy and scheduler configuration of the rendered ConfigMaps.
func configFiles(t *testing.T, objs []*unstructured.Unstructured, policyCM, schedulerCM string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	policy, err := render.ConfigMapData(objs, policyCM, "policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sched, err := render.ConfigMapData(objs, schedulerCM, "scheduler-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	policyFile, schedFile := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "scheduler-config.yaml")
	for f, data := range map[string]string{policyFile: policy, schedFile: sched} {
		if err := os.WriteFile(f, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return policyFile, schedFile
}

// runConsole runs the console in-process as cfg's user until it is ready and has answered explain.
func runConsole(ctx context.Context, t *testing.T, cfg *rest.Config, policyFile, schedFile string) {
	t.Helper()
	logger, _ := ktesting.NewTestContext(t)
	cctx, stop := context.WithCancel(klog.NewContext(ctx, logger))
	// Unauthenticated, as a local --kubeconfig run: loopback, plain HTTP, loopback Host headers only.
	srv, err := console.New(cctx, console.Options{RestConfig: cfg, BindAddress: "127.0.0.1:0", PolicyConfigFile: policyFile, SchedulerConfigFile: schedFile, CacheSyncTimeout: time.Minute, PlainHTTP: true})
	if err != nil {
		stop()
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := srv.Serve(cctx); err != nil {
			t.Errorf("console: %v", err)
		}
	})
	defer func() { stop(); wg.Wait() }()

	var last string
	if err := harness.WaitFor(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		code, body := get(ctx, srv.URL()+"/readyz")
		last = body
		return code == http.StatusOK, nil
	}); err != nil {
		t.Fatalf("the console as %s never became ready: %v (last /readyz: %s)", cfg.Impersonate.UserName, err, last)
	}
	// DNS rebinding: a page of another site whose name resolves to the console sends its own Host;
	// without authentication only localhost, 127.0.0.1 and [::1] with the port are answered.
	port := srv.URL()[strings.LastIndex(srv.URL(), ":")+1:]
	for host, want := range map[string]int{"localhost:" + port: http.StatusOK, "rebound.example:" + port: http.StatusMisdirectedRequest, "localhost:1": http.StatusMisdirectedRequest} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL()+"/api/state", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("/api/state with Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
	start := time.Now()
	code, body := get(ctx, srv.URL()+"/api/explain")
	if code != http.StatusOK {
		t.Fatalf("explain as %s: %d %s", cfg.Impersonate.UserName, code, body)
	}
	t.Logf("console ready and explain answered in %v as %s: %s", time.Since(start).Round(time.Millisecond), cfg.Impersonate.UserName, strings.TrimSpace(body))
}

func get(ctx context.Context, url string) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

func forbidden(t *testing.T, what string, err error) {
	t.Helper()
	if !apierrors.IsForbidden(err) && !strings.Contains(strings.ToLower(errString(err)), "forbidden") {
		t.Errorf("%s: got %v, want Forbidden", what, err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// typed finds one object of objs and converts it.
func typed[T any](t *testing.T, objs []*unstructured.Unstructured, kind, name string) *T {
	t.Helper()
	u := render.Find(objs, kind, name)
	if u == nil {
		t.Fatalf("no %s %s in the rendered manifests", kind, name)
	}
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		t.Fatalf("%s %s: %v", kind, name, err)
	}
	return out
}

// create creates obj (AlreadyExists is fine: -count=2 runs in one control plane) and deletes it at
// the end of the test.
func create[T any](ctx context.Context, t *testing.T, f func(context.Context, T, metav1.CreateOptions) (T, error), obj T, del func() error) {
	t.Helper()
	if _, err := f(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := del(); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: %v", err)
		}
	})
}
