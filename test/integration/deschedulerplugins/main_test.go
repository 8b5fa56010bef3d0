// Package deschedulerplugins runs Accord's in-tree descheduler plugins against a real control plane
// (test/harness) through the descheduler's in-process entry point, runner.Run: one cycle of each
// plugin, from the upstream-format policy files in pkg/descheduler/framework/plugins/testdata.
package deschedulerplugins

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/accord-sched/accord/pkg/descheduler/runner"
	"github.com/accord-sched/accord/test/harness"
)

var env *harness.Env

func TestMain(m *testing.M) {
	// kube-scheduler (run in-process by the end-to-end tests) listens for SIGUSR2; start Go's
	// signal goroutine before the harness takes its goroutine baseline, as it lives on.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR2)
	signal.Stop(sig)
	harness.Main(m, &env, harness.Options{})
}

const nsLabel = "test.accord.dev/ns"

// cluster is one test's namespace and nodes.
type cluster struct {
	t     *testing.T
	ns    string
	nodes []string
}

// newCluster creates a namespace and the nodes (named <ns>-<spec name>, labelled for the test).
func newCluster(t *testing.T, prefix string, specs ...harness.NodeSpec) *cluster {
	t.Helper()
	ctx := context.Background()
	c := &cluster{t: t, ns: env.CreateNamespace(t, prefix)}
	for _, spec := range specs {
		spec.Name = c.ns + "-" + spec.Name
		labels := map[string]string{nsLabel: c.ns}
		for k, v := range spec.Labels {
			labels[k] = v
		}
		spec.Labels = labels
		if _, err := env.Nodes.CreateNode(ctx, spec); err != nil {
			t.Fatal(err)
		}
		name := spec.Name
		t.Cleanup(func() { _ = env.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		c.nodes = append(c.nodes, name)
	}
	if err := env.Nodes.WaitForNodesReady(ctx, c.nodes...); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *cluster) node(short string) string { return c.ns + "-" + short }

// pod creates a running pod bound to the node, owned by a ReplicaSet that does not exist (so the
// DefaultEvictor treats it as replaceable and no controller interferes), and waits until the node
// simulator reports it Running.
func (c *cluster) pod(name, node string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	c.t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.ns, Labels: map[string]string{"app": "web"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: types.UID("rs-" + c.ns)}}},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0), NodeName: c.node(node), Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
	}
	for _, m := range mutate {
		m(p)
	}
	created, err := env.Client.CoreV1().Pods(c.ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	err = harness.WaitFor(ctx, 10*time.Second, func(ctx context.Context) (bool, error) {
		got, err := env.Client.CoreV1().Pods(c.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		created = got
		return got.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		c.t.Fatalf("pod %s not running: %v", name, err)
	}
	return created
}

// status updates a running pod's status.
func (c *cluster) status(p *corev1.Pod, mutate func(*corev1.PodStatus)) {
	c.t.Helper()
	p = p.DeepCopy()
	mutate(&p.Status)
	if _, err := env.Client.CoreV1().Pods(c.ns).UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

// runPolicy runs one descheduling cycle with the policy file of the plugin, limited to this test's
// nodes (a top-level nodeSelector is added) and with the replacements applied (old, new, ...).
// The default SchedulerSimulation preEvictionFilter is disabled: these tests check what each plugin
// nominates and evicts; the end-to-end tests run with it, against the real accord-scheduler.
func (c *cluster) runPolicy(file string, replacements ...string) {
	c.t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "pkg", "descheduler", "framework", "plugins", "testdata", "policies", file))
	if err != nil {
		c.t.Fatal(err)
	}
	doc := string(data)
	for i := 0; i+1 < len(replacements); i += 2 {
		if !strings.Contains(doc, replacements[i]) {
			c.t.Fatalf("%q not in %s", replacements[i], file)
		}
		doc = strings.Replace(doc, replacements[i], replacements[i+1], 1)
	}
	doc = strings.Replace(doc, `kind: "DeschedulerPolicy"`, fmt.Sprintf("kind: \"DeschedulerPolicy\"\nnodeSelector: %q", nsLabel+"="+c.ns), 1)
	doc = strings.Replace(doc, "    plugins:\n", "    plugins:\n      preEvictionFilter:\n        disabled: [SchedulerSimulation]\n", 1)
	path := filepath.Join(c.t.TempDir(), file)
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := runner.Run(ctx, runner.Config{RestConfig: env.Config, PolicyConfigFile: path}); err != nil {
		c.t.Fatal(err)
	}
}

// evicted returns the names of the pods that were evicted (gone, replaced or terminating), sorted.
func (c *cluster) evicted(pods ...*corev1.Pod) []string {
	c.t.Helper()
	var out []string
	for _, p := range pods {
		got, err := env.Client.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			out = append(out, p.Name)
		case err != nil:
			c.t.Fatal(err)
		case got.UID != p.UID || got.DeletionTimestamp != nil:
			out = append(out, p.Name)
		}
	}
	slices.Sort(out)
	return out
}

func (c *cluster) expect(got []string, want ...string) {
	c.t.Helper()
	if want == nil {
		want = []string{}
	}
	if got == nil {
		got = []string{}
	}
	if !slices.Equal(got, want) {
		c.t.Fatalf("evicted %v, want %v", got, want)
	}
}

func requests(cpu string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	}
}

func labels(kv ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		for i := 0; i+1 < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}
