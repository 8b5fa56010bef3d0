package crcache

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"

	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	accordfake "github.com/accord-sched/accord/pkg/generated/clientset/versioned/fake"
)

func nodeObj(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// byNode and byName read the published maps' shards.
func (x *NodeIndex) byNode(n *corev1.Node) *NodeData {
	return x.maps.Load().byNode[nodeShard(n)].find(n)
}
func (x *NodeIndex) byName(name string) *NodeData {
	return x.maps.Load().byName[x.nameShard(name)][name]
}

// sizes counts the Node objects and the names in the published maps.
func (x *NodeIndex) sizes() (nodes, names int) {
	m := x.maps.Load()
	for i := range shards {
		for _, s := range m.byNode[i] {
			if s.node != nil {
				nodes++
			}
		}
		names += len(m.byName[i])
	}
	return nodes, names
}

// shardsCopied counts the shards of b that are not those of a.
func shardsCopied(a, b *nodeMaps) int {
	n := 0
	for i := range shards {
		if reflect.ValueOf(a.byNode[i]).UnsafePointer() != reflect.ValueOf(b.byNode[i]).UnsafePointer() {
			n++
		}
		if reflect.ValueOf(a.byName[i]).UnsafePointer() != reflect.ValueOf(b.byName[i]).UnsafePointer() {
			n++
		}
	}
	return n
}

func metricObj(name, rv string) *slov1alpha1.NodeMetric {
	return &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv}}
}

// The index answers by Node object and by name, follows the CR and Node informers through its
// handlers, and republishes only the shards that hold the node that changed.
func TestNodeIndexFollowsInformers(t *testing.T) {
	x := NewNodeIndex()
	offers, loads, h := x.ClusterScopedResourceHandler(), x.NodeMetricHandler(), x.NodeHandler()
	offers.OnAdd(csr("n1", "example.com/memory"), true)
	offers.OnAdd(nodeObj("n3"), true) // not a ClusterScopedResource: ignored
	if d := x.Get("n3"); d != nil {
		t.Fatalf("a Node delivered to the CR handler made %+v", d)
	}

	n1 := nodeObj("n1")
	if d := x.Lookup(n1); d == nil || d.CR == nil || d.Offer == nil || d.Node != nil {
		t.Fatalf("before the informer delivers n1: %+v, want its CR and Offer by name", d)
	}
	h.OnAdd(n1, true)
	if d := x.Lookup(n1); d == nil || d.Node != n1 || x.byNode(n1) == nil {
		t.Fatalf("after the add: %+v, want n1 by its Node object", d)
	}

	maps := x.maps.Load()
	loads.OnAdd(metricObj("n1", "1"), false)
	offers.OnUpdate(csr("n1", "example.com/memory"), csr("n1"))
	if copied := shardsCopied(maps, x.maps.Load()); copied != 2 {
		t.Errorf("a CR and a NodeMetric change of n1 copied %d shards; want n1's two (by Node, by name)", copied)
	}
	if d := x.Lookup(n1); d.Metric == nil || d.Load == nil || d.Offer == nil || len(d.CR.Spec.ResourcesFilter) != 0 {
		t.Fatalf("after the metric and the CR changed: %+v", d)
	}

	n1b := n1.DeepCopy()
	h.OnUpdate(n1, n1b)
	if nodes, _ := x.sizes(); x.byNode(n1) != nil || x.byNode(n1b) == nil || nodes != 1 {
		t.Fatalf("after the Node update, byNode holds %d objects, the old one: %v, the new one: %v; want only the new one", nodes, x.byNode(n1) != nil, x.byNode(n1b) != nil)
	}
	if d := x.Lookup(n1); d == nil || d.Node != n1b {
		t.Fatalf("a snapshot still holding the old Node object: %+v, want the node's data by name", d)
	}
	if x.byName("n1") != x.byNode(n1b) {
		t.Error("n1's data by name and by its new Node object differ")
	}

	h.OnAdd(nodeObj("n2"), true)
	if d := x.Get("n2"); d == nil || d.CR != nil || d.Metric != nil {
		t.Fatalf("n2, a node without CRs: %+v", d)
	}

	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "n1", Obj: n1b})
	offers.OnDelete(cache.DeletedFinalStateUnknown{Key: "n1", Obj: csr("n1")})
	if d := x.Get("n1"); d == nil || d.Metric == nil || d.Node != nil || d.Offer != nil {
		t.Fatalf("n1 with only its metric left: %+v", d)
	}
	loads.OnDelete(metricObj("n1", "1"))
	if d := x.Get("n1"); d != nil {
		t.Fatalf("n1 with neither Node, CR nor metric: %+v, want nil", d)
	}
	if nodes, names := x.sizes(); names != 1 || nodes != 1 {
		t.Fatalf("maps after n1 left: %d names, %d Node objects; want n2 only", names, nodes)
	}
}

// A value registered with Derive is there for every node when Derive returns, and is derived again
// on every change.
func TestNodeIndexDerive(t *testing.T) {
	x := NewNodeIndex()
	loads := x.NodeMetricHandler()
	loads.OnAdd(metricObj("n1", "1"), true)
	describe := func(d *NodeData, v *string) bool {
		if d.Metric == nil {
			return false // none without a metric
		}
		node := "none"
		if d.Node != nil {
			node = d.Node.Name
		}
		*v = node + "/" + d.Metric.ResourceVersion
		return true
	}
	derived := func(k DerivedKey) string {
		v, ok := x.Get("n1").Derived(k).(*string)
		if !ok {
			return "<nil>"
		}
		return *v
	}
	k := Derive(x, describe)
	if got := derived(k); got != "none/1" {
		t.Fatalf("derived before the Node = %v", got)
	}
	first := x.Get("n1").Derived(k).(*string)
	x.NodeHandler().OnAdd(nodeObj("n1"), true)
	loads.OnUpdate(metricObj("n1", "1"), metricObj("n1", "2"))
	if got := derived(k); got != "n1/2" {
		t.Fatalf("derived after the Node and a new metric = %v", got)
	}
	if *first != "none/1" {
		t.Errorf("the value derived for the first data changed to %q: a change must derive into new memory", *first)
	}
	// A second deriver of another type, registered later, is filled for the existing data too,
	// and the first one's value is kept.
	k2 := Derive(x, func(d *NodeData, v *[3]int64) bool { v[2] = int64(len(d.Node.Name)); return true })
	if got := x.Get("n1").Derived(k2).(*[3]int64); got[2] != 2 {
		t.Errorf("second deriver = %v, want [0 0 2]", *got)
	}
	if got := derived(k); got != "n1/2" {
		t.Fatalf("first deriver after the second registered = %v", got)
	}
	loads.OnDelete(metricObj("n1", "2"))
	if got := x.Get("n1").Derived(k); got != nil {
		t.Errorf("derived without a metric = %v, want nil (fill reported none)", got)
	}
	if got := x.Get("n1").Derived(k2 + 1); got != nil {
		t.Errorf("an unregistered key = %v, want nil", got)
	}
	if got := (*NodeData)(nil).Derived(k); got != nil {
		t.Errorf("nil data = %v, want nil", got)
	}
}

// Readers never see a torn state while the informers' handlers write (run with -race).
func TestNodeIndexConcurrentReaders(t *testing.T) {
	x := NewNodeIndex()
	loads, h := x.NodeMetricHandler(), x.NodeHandler()
	nodes := make([]*corev1.Node, 50)
	for i := range nodes {
		nodes[i] = nodeObj(fmt.Sprintf("n%d", i))
		h.OnAdd(nodes[i], true)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, n := range nodes {
					if d := x.Lookup(n); d == nil || (d.Node != nil && d.Node.Name != n.Name) {
						t.Errorf("Lookup(%s) = %+v", n.Name, d)
						return
					}
				}
			}
		})
	}
	for i := range 500 {
		n := nodes[i%len(nodes)]
		loads.OnAdd(metricObj(n.Name, fmt.Sprint(i)), false)
		h.OnUpdate(n, n.DeepCopy())
	}
	close(stop)
	wg.Wait()
}

// handleWithInformers is the part of a framework Handle that Cache.Nodes reads.
type handleWithInformers struct {
	fwk.Handle
	f informers.SharedInformerFactory
}

func (h handleWithInformers) SharedInformerFactory() informers.SharedInformerFactory { return h.f }

// Cache.Nodes registers one Node handler however many plugins ask, and the index it returns follows
// the Cache's CR informers, asked for before or after.
func TestCacheNodesIsOneIndex(t *testing.T) {
	c := NewForClient(accordfake.NewSimpleClientset(csr("n1", "example.com/memory"), metricObj("n1", "1"))) //nolint:staticcheck // as TestCacheSharesOneFactoryAndFollowsEvents
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); c.Shutdown() }()
	if _, err := c.ClusterScopedResources(ctx, nil); err != nil {
		t.Fatal(err)
	}
	f := informers.NewSharedInformerFactory(fake.NewClientset(nodeObj("n1")), 0)
	h := handleWithInformers{f: f}
	x, err := c.Nodes(h)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := c.Nodes(h); again != x {
		t.Fatal("a second plugin got another index")
	}
	if _, err := c.NodeMetrics(ctx, nil); err != nil {
		t.Fatal(err)
	}
	informersCtx, stopInformers := context.WithCancel(ctx)
	f.Start(informersCtx.Done())
	defer func() { stopInformers(); f.Shutdown() }()
	syncCtx, done := context.WithTimeout(ctx, 30*time.Second)
	defer done()
	if !cache.WaitForCacheSync(syncCtx.Done(), c.HasSynced) {
		t.Fatal("the Cache, with its Node handler, never synced")
	}
	d := x.Get("n1")
	if d == nil || d.Node == nil || d.CR == nil || d.Metric == nil {
		t.Fatalf("n1 = %+v, want its Node, CR and NodeMetric", d)
	}
	if n, _ := f.Core().V1().Nodes().Lister().Get("n1"); x.Lookup(n) != d {
		t.Error("the informer's Node object does not find the node's data")
	}
}

// What the informer's handler pays per Node event at 5000 nodes, each with a CR and a NodeMetric:
// "update" replaces one Node object (byNode is copied); "metric" is a NodeMetric change (the maps
// are left alone); "initial-list" adds all 5000 Nodes, as the informer's first list does.
func BenchmarkNodeIndex(b *testing.B) {
	const n = 5000
	// fill makes an index of n nodes' CRs and metrics, and feeds it their Nodes when added is set.
	fill := func(added bool) (*NodeIndex, cache.ResourceEventHandler, []*corev1.Node) {
		x := NewNodeIndex()
		offers, loads := x.ClusterScopedResourceHandler(), x.NodeMetricHandler()
		nodes := make([]*corev1.Node, n)
		for i := range nodes {
			nodes[i] = nodeObj(fmt.Sprintf("node-%d", i))
			offers.OnAdd(csr(nodes[i].Name, "cpu", "memory"), true)
			loads.OnAdd(metricObj(nodes[i].Name, "1"), true)
		}
		if added {
			for _, node := range nodes {
				x.NodeHandler().OnAdd(node, true)
			}
		}
		return x, loads, nodes
	}
	b.Run("update", func(b *testing.B) {
		x, _, nodes := fill(true)
		h := x.NodeHandler()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			old := nodes[i%n]
			nodes[i%n] = old.DeepCopy()
			h.OnUpdate(old, nodes[i%n])
		}
	})
	b.Run("metric", func(b *testing.B) {
		_, loads, nodes := fill(true)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			loads.OnAdd(metricObj(nodes[i%n].Name, "2"), false)
		}
	})
	b.Run("initial-list", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			x, _, nodes := fill(false)
			h := x.NodeHandler()
			b.StartTimer()
			for _, node := range nodes {
				h.OnAdd(node, true)
			}
		}
	})
}

// TestNodeTable: a table finds every Node object it holds and none it does not, through additions,
// replacements and removals that collide in its slots.
func TestNodeTable(t *testing.T) {
	nodes := make([]*corev1.Node, 300)
	var tab nodeTable
	for i := range nodes {
		nodes[i] = nodeObj(fmt.Sprintf("n%d", i))
		tab = tab.with(nodes[i], &NodeData{Node: nodes[i]})
	}
	tab = tab.with(nodes[0], &NodeData{}) // replaced
	for i := 1; i < len(nodes); i += 2 {
		tab = tab.with(nodes[i], nil)
	}
	tab = tab.with(nodeObj("never"), nil)
	used := 0
	for _, s := range tab {
		if s.node != nil {
			used++
		}
	}
	if used != len(nodes)/2 || len(tab) < 2*used {
		t.Fatalf("the table holds %d of %d slots; want %d entries in at least twice as many slots", used, len(tab), len(nodes)/2)
	}
	for i, n := range nodes {
		d := tab.find(n)
		switch {
		case i == 0 && (d == nil || d.Node != nil):
			t.Errorf("node 0: find = %v, want the replacement", d)
		case i%2 == 1 && d != nil:
			t.Errorf("node %d was removed, find = %v", i, d)
		case i > 0 && i%2 == 0 && (d == nil || d.Node != n):
			t.Errorf("node %d: find = %v", i, d)
		}
	}
	if tab.find(nodeObj("n2")) != nil {
		t.Error("found a Node object by an equal copy of another")
	}
	if nodeTable(nil).with(nodes[0], nil) != nil || nodeTable(nil).find(nodes[0]) != nil {
		t.Error("an empty table is not empty")
	}
}

// TestNodeDataHoldsItsOffer: the Offer a node's data points at lives inside that data (a copy of
// the compiled one that answers the same), through a CR's add and update, the Node's arrival and a
// NodeMetric's (which copy the data), and is gone with the CR.
func TestNodeDataHoldsItsOffer(t *testing.T) {
	x := NewNodeIndex()
	offers, loads, h := x.ClusterScopedResourceHandler(), x.NodeMetricHandler(), x.NodeHandler()
	n1 := nodeObj("n1")
	check := func(step string, enabled, missing corev1.ResourceName) {
		t.Helper()
		d := x.Get("n1")
		if d == nil || d.Offer == nil {
			t.Fatalf("%s: no Offer for n1: %+v", step, d)
		}
		if d.Offer != &d.offer {
			t.Errorf("%s: the Offer is not the one inside the node's data", step)
		}
		if _, miss := d.Offer.MissingResource([]corev1.ResourceName{enabled}); miss {
			t.Errorf("%s: the Offer does not enable %s", step, enabled)
		}
		if _, miss := d.Offer.MissingResource([]corev1.ResourceName{missing}); !miss {
			t.Errorf("%s: the Offer enables %s", step, missing)
		}
	}
	offers.OnAdd(csr("n1", "example.com/memory"), true)
	check("CR added", "example.com/memory", "example.com/ssd")
	h.OnAdd(n1, true)
	check("Node added", "example.com/memory", "example.com/ssd")
	if d := x.Lookup(n1); d == nil || d.Offer != &d.offer {
		t.Errorf("Lookup by Node object: %+v, want the data holding its Offer", d)
	}
	loads.OnAdd(metricObj("n1", "1"), true)
	check("NodeMetric added", "example.com/memory", "example.com/ssd")
	offers.OnUpdate(nil, csr("n1", "example.com/ssd"))
	check("CR updated", "example.com/ssd", "example.com/memory")
	offers.OnDelete(csr("n1"))
	if d := x.Get("n1"); d == nil || d.Offer != nil || !reflect.ValueOf(d.offer).IsZero() {
		t.Errorf("CR deleted: %+v, want the node's data without an Offer", d)
	}
}

// The fields Filter and Score read at every node visited stay within NodeData's first cache line.
func TestNodeDataHotFieldsInOneLine(t *testing.T) {
	var d NodeData
	if end := unsafe.Offsetof(d.inline) + unsafe.Sizeof(d.inline[0]); end > 64 {
		t.Errorf("Node, Metric, Offer, derived and inline[0] end at byte %d, want <= 64", end)
	}
}
