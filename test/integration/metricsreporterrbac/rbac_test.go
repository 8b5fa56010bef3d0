// Package metricsreporterrbac runs accord-metrics-reporter on a control plane that authorizes with
// RBAC, as a user bound to exactly the ClusterRole of manifests/metrics-reporter/rbac.yaml: the
// shipped rules are enough to keep NodeMetrics (list/watch nodes, pods and NodeMetrics, read
// metrics.k8s.io, create NodeMetrics, apply their status).
package metricsreporterrbac

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/accord-sched/accord/test/harness"
	"github.com/accord-sched/accord/test/metricsapi"
	"github.com/accord-sched/accord/test/reportertest"
)

var env *harness.Env

func TestMain(m *testing.M) {
	harness.Main(m, &env, harness.Options{APIServerFlags: []string{"--authorization-mode=RBAC"}, WithoutControllers: true, WithoutNodeSimulator: true})
}

func manifestClusterRole(t *testing.T) *rbacv1.ClusterRole {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "manifests", "metrics-reporter", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var r rbacv1.ClusterRole
		if err := yaml.Unmarshal([]byte(doc), &r); err == nil && r.Kind == "ClusterRole" {
			return &r
		}
	}
	t.Fatal("no ClusterRole in rbac.yaml")
	return nil
}

func TestShippedClusterRole(t *testing.T) {
	ctx := context.Background()
	ms := metricsapi.StartRegistered(t, env.Config)

	const user = "metrics-reporter"
	role := manifestClusterRole(t)
	role.Name = "test-" + role.Name
	if _, err := env.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}}}
	if _, err := env.Client.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.RbacV1().ClusterRoleBindings().Delete(context.Background(), crb.Name, metav1.DeleteOptions{})
	})
	ns := env.CreateNamespace(t, "mr-rbac")
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-n"}}
	if _, err := env.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{})
	})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}, Spec: corev1.PodSpec{NodeName: node.Name,
		Containers: []corev1.Container{{Name: "c", Image: "pause"}}}}
	if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ms.SetNode(node.Name, "1", "1Gi")
	ms.SetPod(ns, "p", "250m", "10Mi")

	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	// The authorizer's cache takes a moment to see the new binding: wait until the user may list
	// nodes before starting (the reporter's informers would retry anyway, with backoff).
	imp, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitFor(ctx, 10*time.Second, func(ctx context.Context) (bool, error) {
		_, err := imp.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	reportertest.Start(t, cfg, "samplingPeriodSeconds: 1\ndefaultReportIntervalSeconds: 1\nstatistic: last\n")
	if err := harness.WaitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		nm, err := env.Accord.SloV1alpha1().NodeMetrics().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil || nm.Status.UpdateTime == nil || len(nm.Status.PodsUsage) != 1 {
			return false, nil
		}
		return nm.Status.NodeUsage.Cpu().Equal(resource.MustParse("1")), nil
	}); err != nil {
		t.Fatalf("the reporter under the shipped ClusterRole wrote no NodeMetric: %v", err)
	}
}
