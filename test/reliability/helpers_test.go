package reliability

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	fwruntime "github.com/accord-sched/accord/pkg/descheduler/framework/runtime"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
	accordinformers "github.com/accord-sched/accord/pkg/generated/informers/externalversions"
	"github.com/accord-sched/accord/test/harness"
)

// nsLabel marks the nodes of one test, so a policy's nodeSelector keeps to them.
const nsLabel = "test.accord.dev/ns"

// cluster is one test's namespace and simulated nodes (named <ns>-<short name>).
type cluster struct {
	t     testing.TB
	ns    string
	nodes []string
}

func newCluster(t testing.TB, prefix string, nodes ...string) *cluster {
	t.Helper()
	ctx := context.Background()
	c := &cluster{t: t, ns: env.CreateNamespace(t, prefix)}
	for _, short := range nodes {
		name := c.ns + "-" + short
		if _, err := env.Nodes.CreateNode(ctx, harness.NodeSpec{Name: name, Labels: map[string]string{nsLabel: c.ns}}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		c.nodes = append(c.nodes, name)
	}
	if err := env.Nodes.WaitForNodesReady(ctx, c.nodes...); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *cluster) node(short string) string { return c.ns + "-" + short }

// newPod is a pod bound to node, owned by a ReplicaSet that does not exist (the DefaultEvictor treats
// it as replaceable and no controller recreates it).
func (c *cluster) newPod(name, node string, lbls map[string]string) *corev1.Pod {
	l := map[string]string{"app": "web"}
	for k, v := range lbls {
		l[k] = v
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.ns, Labels: l,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: types.UID("rs-" + c.ns)}}},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0), NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
	}
}

// create creates the pods and waits until the node simulator reports each Running (and Ready);
// it returns them as read back.
func (c *cluster) create(pods ...*corev1.Pod) []*corev1.Pod {
	c.t.Helper()
	ctx := context.Background()
	for _, p := range pods {
		if _, err := env.Client.CoreV1().Pods(c.ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			c.t.Fatalf("creating pod %s: %v", p.Name, err)
		}
	}
	out := make([]*corev1.Pod, len(pods))
	err := harness.WaitFor(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		for i, p := range pods {
			if out[i] != nil {
				continue
			}
			got, err := env.Client.CoreV1().Pods(c.ns).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if got.Status.Phase != corev1.PodRunning || !podReady(got) {
				return false, nil
			}
			out[i] = got
		}
		return true, nil
	})
	if err != nil {
		c.t.Fatalf("pods not running: %v", err)
	}
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// writePolicy writes a DeschedulerPolicy limited to this test's nodes; body is the YAML after `kind`.
func (c *cluster) writePolicy(body string) string {
	c.t.Helper()
	doc := fmt.Sprintf("apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nnodeSelector: %q\n%s", nsLabel+"="+c.ns, body)
	path := filepath.Join(c.t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		c.t.Fatal(err)
	}
	return path
}

// buildDescheduler builds the descheduler runtime of a policy on the real apiserver, with its
// informers started and synced: its profiles' evictors are the ones a cycle and the controllers use.
// opts adjust the runtime's options (a tracer, an observer) before it is built.
func buildDescheduler(t testing.TB, policyFile string, cfg *rest.Config, opts ...func(*fwruntime.Options)) *fwruntime.Descheduler {
	t.Helper()
	return buildDeschedulerWithPlugins(t, policyFile, cfg, nil, opts...)
}

// buildDeschedulerWithPlugins is buildDescheduler with out-of-tree plugins the policy may enable.
func buildDeschedulerWithPlugins(t testing.TB, policyFile string, cfg *rest.Config, plugins []runner.Option, opts ...func(*fwruntime.Options)) *fwruntime.Descheduler {
	t.Helper()
	p, reg, err := runner.LoadPolicy(policyFile, "", plugins...)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	accordFactory := accordinformers.NewSharedInformerFactory(env.Accord, 0)
	o := fwruntime.Options{Client: client, InformerFactory: factory, AccordInformerFactory: accordFactory,
		Registry: reg, Metrics: metrics.New()}
	for _, f := range opts {
		f(&o)
	}
	d, err := fwruntime.New(t.Context(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	harness.StartInformers(t, factory)
	harness.StartInformers(t, accordFactory)
	return d
}

// gone reports whether the pod named like p is gone, recreated (another UID) or terminating.
func gone(ctx context.Context, p *corev1.Pod) (bool, error) {
	got, err := env.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return got.UID != p.UID || got.DeletionTimestamp != nil, nil
}

// figure prints a figure in the fixed form the lead greps for.
func figure(t testing.TB, name string, format string, args ...any) {
	t.Helper()
	t.Logf("FIGURE %s: %s", name, strings.TrimSpace(fmt.Sprintf(format, args...)))
}

// profile is a policy's profile that runs one deschedule plugin (and, for NodeCRDResourceFit, its
// event-triggered controller when started), with args (one YAML line per field) when given, with
// DefaultEvictor and without the scheduler simulation: these tests count evictions, not where the
// replacements land.
func profile(name, plugin string, args ...string) string {
	config := ""
	if len(args) > 0 {
		config = "\n    args:\n      " + strings.Join(args, "\n      ")
	}
	return "- name: " + name + `
  pluginConfig:
  - name: DefaultEvictor
  - name: ` + plugin + config + `
  plugins:
    deschedule:
      enabled: [` + plugin + `]
    preEvictionFilter:
      disabled: [SchedulerSimulation]
`
}

// crdResourceFitPolicy is one profile of NodeCRDResourceFit over this test's nodes; limits is YAML
// put before the profiles.
func crdResourceFitPolicy(name, limits string) string {
	return limits + "profiles:\n" + profile(name, "NodeCRDResourceFit")
}

// createCRs gives each node a ClusterScopedResource enabling CPU (pods requesting CPU fit), deleted
// when the test ends.
func (c *cluster) createCRs() {
	c.t.Helper()
	ctx := context.Background()
	for _, n := range c.nodes {
		cr := &schedv1alpha1.ClusterScopedResource{ObjectMeta: metav1.ObjectMeta{Name: n},
			Spec: schedv1alpha1.ClusterScopedResourceSpec{ResourcesFilter: map[corev1.ResourceName]bool{corev1.ResourceCPU: true}}}
		if _, err := env.Accord.SchedulingV1alpha1().ClusterScopedResources().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
			c.t.Fatal(err)
		}
		c.t.Cleanup(func() {
			_ = env.Accord.SchedulingV1alpha1().ClusterScopedResources().Delete(context.Background(), n, metav1.DeleteOptions{})
		})
	}
}

// disableCPU makes the nodes' ClusterScopedResources stop enabling CPU: every pod requesting CPU on
// them violates at once.
func (c *cluster) disableCPU(nodes ...string) {
	c.t.Helper()
	for _, n := range nodes {
		if _, err := env.Accord.SchedulingV1alpha1().ClusterScopedResources().Patch(context.Background(), n, types.MergePatchType,
			[]byte(`{"spec":{"resourcesFilter":{"cpu":false}}}`), metav1.PatchOptions{}); err != nil {
			c.t.Fatal(err)
		}
	}
}

// cpuPod is newPod requesting 1m of CPU (a violator once its node's CR disables CPU).
func (c *cluster) cpuPod(name, node string) *corev1.Pod {
	p := c.newPod(name, node, nil)
	p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m")}
	return p
}
