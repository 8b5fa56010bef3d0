// Package plugintest runs descheduler plugins against fake clusters in unit tests and benchmarks,
// with a real profile evictor: the DefaultEvictor at filter and preEvictionFilter, the Eviction-API
// evict plugin, and the framework's limiter.
package plugintest

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	"github.com/accord-sched/accord/pkg/descheduler/evictions"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/defaultevictor"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/evictionapi"
	fwruntime "github.com/accord-sched/accord/pkg/descheduler/framework/runtime"
	accordfake "github.com/accord-sched/accord/pkg/generated/clientset/versioned/fake"
	accordinformers "github.com/accord-sched/accord/pkg/generated/informers/externalversions"
)

// Env is a fake cluster with a framework.Handle and a profile evictor.
type Env struct {
	*fake.Cluster
	Evictor *evictions.ProfileEvictor
	h       *fake.Handle
}

// Options configure an Env.
type Options struct {
	// DefaultEvictor args; nil means the defaults (which protect bare pods, local storage, ...).
	DefaultEvictor *defaultevictor.DefaultEvictorArgs
	// Limits of the cycle; the zero value is unlimited.
	Limits evictions.Limits
	// DryRun makes evictions logged no-ops.
	DryRun bool
	// CRs are ClusterScopedResources and NodeMetrics put in the Accord fake clientset.
	CRs []runtime.Object
	// NodeSelector is the profile's node selector the Handle reports; nil means everything.
	NodeSelector labels.Selector
	// MetricsProviders is what the Handle reports as the policy's metrics sources.
	MetricsProviders framework.MetricsProviders
}

// New returns an Env holding objs (nodes, pods, ...). Build the plugin under test with Handle, then
// call Start.
func New(t testing.TB, opts Options, objs ...runtime.Object) *Env {
	t.Helper()
	c := fake.NewCluster(objs...)
	// The field-managed fake tracker of NewClientset has no schema for Accord's CRDs and refuses
	// updates; the simple tracker takes them.
	c.Accord = accordfake.NewSimpleClientset()
	c.CRs = accordinformers.NewSharedInformerFactory(c.Accord, 0)
	for _, o := range opts.CRs {
		if err := c.Accord.Tracker().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return newEnv(t, c, opts)
}

func newEnv(t testing.TB, c *fake.Cluster, opts Options) *Env {
	t.Helper()
	indexer, err := fwruntime.AddPodNodeIndex(c.Factory)
	if err != nil {
		t.Fatal(err)
	}
	// The runtime lists nodes from this informer; register it before the factory starts.
	c.Factory.Core().V1().Nodes().Informer()
	h := &fake.Handle{Cluster: c, Pods: indexer, Selector: opts.NodeSelector, Metrics: opts.MetricsProviders}
	args := opts.DefaultEvictor
	if args == nil {
		args = &defaultevictor.DefaultEvictorArgs{}
	}
	args.SetDefaults()
	if errs := args.Validate(nil); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	de, err := defaultevictor.New(t.Context(), args, h)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := evictionapi.New(t.Context(), nil, h)
	if err != nil {
		t.Fatal(err)
	}
	ev := &evictions.ProfileEvictor{
		Profile:            "test",
		Filters:            []framework.EvictorPlugin{de.(framework.EvictorPlugin)},
		PreEvictionFilters: []framework.EvictorPlugin{de.(framework.EvictorPlugin)},
		EvictPlugin:        ep.(framework.EvictPlugin),
		Limiter:            evictions.NewLimiter(opts.Limits),
		DryRun:             opts.DryRun,
	}
	h.Evict = ev
	return &Env{Cluster: c, Evictor: ev, h: h}
}

// Handle is the plugin's handle.
func (e *Env) Handle() framework.Handle { return e.h }

// Start starts the informers and waits for their caches.
func (e *Env) Start(t testing.TB) { e.Cluster.Start(t) }

// NewCycle resets the per-cycle limits.
func (e *Env) NewCycle() { e.Evictor.Limiter.Reset() }

// Nodes returns the nodes in the informer cache that Options.NodeSelector matches, sorted by name:
// the nodes a cycle of the profile would be given.
func (e *Env) Nodes(t testing.TB) []*corev1.Node {
	t.Helper()
	list, err := e.Factory.Core().V1().Nodes().Lister().List(e.h.NodeSelector())
	if err != nil {
		t.Fatal(err)
	}
	sortNodes(list)
	return list
}

// Deschedule runs a DeschedulePlugin's cycle over every node and returns the evicted pods.
func (e *Env) Deschedule(t testing.TB, pl framework.DeschedulePlugin) []string {
	t.Helper()
	before := len(e.Evictions())
	e.NewCycle()
	if st := pl.Deschedule(context.Background(), e.Nodes(t)); !st.IsSuccess() {
		t.Fatalf("Deschedule: %v", st.AsError())
	}
	return e.settle(t, before)
}

// Balance runs a BalancePlugin's cycle over every node and returns the evicted pods.
func (e *Env) Balance(t testing.TB, pl framework.BalancePlugin) []string {
	t.Helper()
	before := len(e.Evictions())
	e.NewCycle()
	if st := pl.Balance(context.Background(), e.Nodes(t)); !st.IsSuccess() {
		t.Fatalf("Balance: %v", st.AsError())
	}
	return e.settle(t, before)
}

// CR helpers.

// CSR returns a ClusterScopedResource for node enabling the given resources.
func CSR(node string, enabled ...corev1.ResourceName) *schedv1alpha1.ClusterScopedResource {
	f := map[corev1.ResourceName]bool{}
	for _, r := range enabled {
		f[r] = true
	}
	csr := &schedv1alpha1.ClusterScopedResource{Spec: schedv1alpha1.ClusterScopedResourceSpec{ResourcesFilter: f}}
	csr.Name = node
	return csr
}

// NodeMetric returns a NodeMetric for node with the given usage, updated at ts.
func NodeMetric(node string, usage corev1.ResourceList, ts *slov1alpha1.NodeMetricStatus) *slov1alpha1.NodeMetric {
	m := &slov1alpha1.NodeMetric{}
	m.Name = node
	if ts != nil {
		m.Status = *ts
	}
	m.Status.NodeUsage = usage
	return m
}

// settle removes the pods evicted since before from the informer cache, as the watch would (the
// fake clientset's watch can miss events sent before it is established), so the next cycle sees
// the cluster as the apiserver does; it returns them sorted.
func (e *Env) settle(t testing.TB, before int) []string {
	t.Helper()
	got := e.Evictions()[before:]
	indexer := e.Factory.Core().V1().Pods().Informer().GetIndexer()
	for _, key := range got {
		obj, exists, err := indexer.GetByKey(key)
		if err != nil {
			t.Fatal(err)
		}
		if exists {
			if err := indexer.Delete(obj); err != nil {
				t.Fatal(err)
			}
		}
	}
	slices.Sort(got)
	return got
}
