package runtime_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins"
	fwruntime "github.com/accord-sched/accord/pkg/descheduler/framework/runtime"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
	"github.com/accord-sched/accord/pkg/descheduler/policy"
)

// nominator nominates every 100th pod (1%) of each node it is given: it lists the node's pods
// through the profile's Filter, runs PreEvictionFilter on the nominees and evicts them.
type nominator struct{ h framework.Handle }

func (n *nominator) Name() string { return "Nominator" }
func (n *nominator) Balance(ctx context.Context, nodes []*corev1.Node) *framework.Status {
	ev := n.h.Evictor()
	for _, node := range nodes {
		pods, err := n.h.GetPodsAssignedToNode(node.Name, ev.Filter)
		if err != nil {
			return framework.NewStatus(err)
		}
		for _, p := range pods {
			if p.Labels["nominee"] != "true" || !ev.PreEvictionFilter(p) {
				continue
			}
			if err := ev.Evict(ctx, p, framework.EvictOptions{PluginName: "Nominator", Reason: "benchmark"}); framework.IsTotalLimit(err) {
				return nil
			}
		}
	}
	return nil
}

// countingEvict is an evict plugin that only counts, so the benchmark measures the framework, not a
// fake apiserver.
type countingEvict struct{ n atomic.Int64 }

func (c *countingEvict) Name() string { return "CountingEvict" }
func (c *countingEvict) Evict(context.Context, *corev1.Pod, framework.EvictOptions) error {
	c.n.Add(1)
	return nil
}

// BenchmarkCycle measures one descheduling cycle over 5000 nodes and 100k pods held in the informer
// caches, with a Balance plugin nominating 1% of the pods (1000 evictions, limits high enough not to
// stop them) through the DefaultEvictor's filters, the limit checks, metrics and a counting evict
// plugin.
func BenchmarkCycle(b *testing.B) {
	const nodes, podsPerNode = 5000, 20
	klog.SetLogger(klog.Background().V(10)) // keep the per-eviction log lines out of the measurement
	defer klog.ClearLogger()
	counter := &countingEvict{}
	reg := plugins.NewInTreeRegistry()
	_ = reg.Register("Nominator", func(_ context.Context, _ k8sruntime.Object, h framework.Handle) (framework.Plugin, error) {
		return &nominator{h: h}, nil
	})
	_ = reg.Register("CountingEvict", func(context.Context, k8sruntime.Object, framework.Handle) (framework.Plugin, error) {
		return counter, nil
	})
	args := plugins.NewInTreeArgs()
	p, err := policy.Decode([]byte(`apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
maxNoOfPodsToEvictPerNode: 100
maxNoOfPodsToEvictTotal: 100000
profiles:
- name: bench
  pluginConfig:
  - name: DefaultEvictor
    args: {minPodAge: 1m}
  plugins:
    balance: {enabled: [Nominator]}
    evict: {enabled: [CountingEvict]}
`), args)
	if err != nil {
		b.Fatal(err)
	}
	if errs := policy.Validate(p, reg, args); len(errs) > 0 {
		b.Fatal(errs)
	}
	c := fake.NewCluster()
	d, err := fwruntime.New(b.Context(), p, fwruntime.Options{Client: c.Client, InformerFactory: c.Factory, AccordInformerFactory: c.CRs, Registry: reg, Metrics: metrics.New()})
	if err != nil {
		b.Fatal(err)
	}
	// Fill the informer caches directly.
	nodeStore := c.Factory.Core().V1().Nodes().Informer().GetIndexer()
	podStore := c.Factory.Core().V1().Pods().Informer().GetIndexer()
	for i := range nodes {
		name := fmt.Sprintf("node-%d", i)
		if err := nodeStore.Add(fake.Node(name, nil, 32, 128)); err != nil {
			b.Fatal(err)
		}
		for j := range podsPerNode {
			pod := fake.Pod(fmt.Sprintf("ns-%d", i%50), fmt.Sprintf("pod-%d-%d", i, j), name, 100)
			pod.Labels = map[string]string{"nominee": fmt.Sprint((i*podsPerNode+j)%100 == 0)}
			if err := podStore.Add(pod); err != nil {
				b.Fatal(err)
			}
		}
	}
	ctx := context.Background()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		d.RunCycle(ctx)
	}
	b.StopTimer()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(counter.n.Load())/float64(b.N), "evictions/op")
	b.ReportMetric(float64(after.HeapInuse)/(1<<20), "heap-inuse-MiB")
	if got := counter.n.Load() / int64(b.N); got != nodes*podsPerNode/100 {
		b.Fatalf("evicted %d pods per cycle, want %d", got, nodes*podsPerNode/100)
	}
}
