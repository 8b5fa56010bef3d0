package crcache

import (
	"hash/maphash"
	"maps"
	"math/bits"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	"github.com/accord-sched/accord/pkg/constraints"
)

// NodeIndex is what the Accord plugins of one scheduler know about each node: its Node object, its
// ClusterScopedResource and NodeMetric with their compiled forms, and what each plugin derives from
// them (Derive). A Cache keeps one, fed by its CR informers and by the scheduler's Node informer
// through the index's event handlers (NodeHandler, ClusterScopedResourceHandler, NodeMetricHandler),
// and every Accord plugin of every profile reads it: it is the only copy of the CRs the plugins read
// besides the informers' own.
//
// Filter and Score run once per (pod, node); at thousands of nodes, finding a node's data by its
// name (hashing and comparing names in a map far larger than the CPU's cache) cost more than the
// plugins' checks. The scheduler's snapshot shares Node objects with its informer, so Lookup finds
// a node by its Node object: a table keyed by the pointer (nodeTable) whose values are the node's
// data itself, copied and republished, one shard at a time, by the informers' event handlers when a
// node's Node, CR or NodeMetric changes (never on the scheduling path). A read takes no lock: an
// atomic load and a slot or two of the table, and then each memory access a plugin makes costs (at
// 5000 nodes, each one is likely a cache miss, which is most of what Score costs): the data, and
// what it holds inline.
type NodeIndex struct {
	// mu serialises writers; readers never take it. The maps' byName holds every node the index
	// knows (a Node, a CR or a NodeMetric); writers read it too.
	mu       sync.Mutex
	derivers []*deriver
	// block is the type of the allocation that holds a node's data and the derivers' values (nil:
	// no deriver).
	block reflect.Type
	maps  atomic.Pointer[nodeMaps]
	seed  maphash.Seed

	// changed, when a caller waits for a change (Changed), is closed at the next one; mu guards it.
	changed chan struct{}
}

// nodeMaps is published whole and never modified afterwards. Each map is split in shards, so a
// node's change copies the two shards that hold it (at 5000 nodes, some 80 entries each) rather than
// maps of every node: the informers' first lists, one add per node and kind, then cost
// O(nodes²/shards) instead of O(nodes²).
type nodeMaps struct {
	byNode [shards]nodeTable
	byName [shards]map[string]*NodeData
}

const shardBits = 6

const shards = 1 << shardBits

// nodeHash spreads Node objects by address (Go's heap objects do not move; the address is only
// hashed, never turned back into a pointer): its top bits choose the shard (nodeShard), the bits
// below them the slot (nodeTable).
func nodeHash(n *corev1.Node) uint64 {
	return uint64(uintptr(unsafe.Pointer(n))) * 0x9E3779B97F4A7C15
}

func nodeShard(n *corev1.Node) int { return int(nodeHash(n) >> (64 - shardBits)) }

// nodeTable is one shard of the index by Node object: open addressing over a power-of-two number of
// slots, at most half of them used, so that a lookup reads one 16-byte slot and seldom the next. (A
// Go map reads a group's control word and then its slot, often two cache lines, and at 5000 nodes
// each one is likely a cache miss.) A table is never modified once published: with copies it.
type nodeTable []nodeSlot

type nodeSlot struct {
	node *corev1.Node
	data *NodeData
}

// start is where n's probe begins.
func (t nodeTable) start(n *corev1.Node) uint64 {
	return (nodeHash(n) << shardBits) >> (64 - bits.Len64(uint64(len(t)-1)))
}

// find returns n's data (nil: none).
func (t nodeTable) find(n *corev1.Node) *NodeData {
	if len(t) == 0 {
		return nil
	}
	mask := uint64(len(t) - 1)
	for i := t.start(n); ; i = (i + 1) & mask {
		switch s := &t[i]; s.node {
		case n:
			return s.data
		case nil:
			return nil
		}
	}
}

// with returns a new table of t's entries with n mapped to d (a nil d: n removed).
func (t nodeTable) with(n *corev1.Node, d *NodeData) nodeTable {
	count := 0
	for _, s := range t {
		if s.node != nil && s.node != n {
			count++
		}
	}
	if d != nil {
		count++
	}
	if count == 0 {
		return nil
	}
	size := 8
	for size < 2*count {
		size *= 2
	}
	out := make(nodeTable, size)
	for _, s := range t {
		if s.node != nil && s.node != n {
			out.put(s.node, s.data)
		}
	}
	if d != nil {
		out.put(n, d)
	}
	return out
}

// put sets n's slot in a table being built (n is not in it).
func (t nodeTable) put(n *corev1.Node, d *NodeData) {
	mask := uint64(len(t) - 1)
	for i := t.start(n); ; i = (i + 1) & mask {
		if t[i].node == nil {
			t[i] = nodeSlot{node: n, data: d}
			return
		}
	}
}

func (x *NodeIndex) nameShard(name string) int {
	return int(maphash.String(x.seed, name) >> (64 - shardBits))
}

// NodeData is what the index knows about one node at one moment. It is never modified once
// published: a change publishes a new NodeData.
type NodeData struct {
	// The fields the plugins read at every node they visit come first, within the first 64 bytes:
	// Node, Metric, Offer, derived and its first inline value. That is one cache line when the
	// allocation starts one (Go's size class for NodeData with LoadAware's entry, 704 bytes, is a
	// multiple of 64, so it does), two otherwise.

	// Node is the Node object the informer delivered last (nil: none yet).
	Node *corev1.Node
	// Metric is the node's NodeMetric and Load its compiled form (nil: none).
	Metric *slov1alpha1.NodeMetric
	// Offer is the compiled form of CR (nil: none).
	Offer *constraints.Offer
	// derived holds, by DerivedKey, what each Derive function made of the fields above. It points
	// into inline when that holds them all, which saves Derived a memory access.
	derived []any
	inline  [inlineDerived]any
	// CR is the node's ClusterScopedResource (nil: none).
	CR   *schedv1alpha1.ClusterScopedResource
	Load *constraints.Load
	// offer is where Offer points: the index keeps a copy of the compiled Offer inside the node's
	// data (constraints.Offer.CopyTo), so that NodeCRDResourceFit's Filter and Score, which find the
	// data and then read the Offer at every node they visit, read one object rather than two apart
	// in memory (at 5000 nodes each is likely a cache miss).
	offer constraints.Offer
}

// inlineDerived is how many derived values NodeData holds inline: one per Accord plugin that
// derives (LoadAware) in a profile or two.
const inlineDerived = 2

// DerivedKey names a value registered with Derive.
type DerivedKey int

// deriver is a function registered with Derive: fill sets the value it is given (a *T of the
// deriver's typ, zero) from the data, and reports whether the node has one.
type deriver struct {
	typ  reflect.Type
	fill func(d *NodeData, v any) bool
}

// Derived returns the value (a *T) the Derive function registered under k filled for d (nil for a
// nil d or when it filled none).
func (d *NodeData) Derived(k DerivedKey) any {
	if d == nil || int(k) >= len(d.derived) {
		return nil
	}
	return d.derived[k]
}

// NewNodeIndex returns an empty index. A Cache makes its own (Cache.Nodes) and registers its event
// handlers on its informers; a caller without a Cache (a benchmark, a plugin's unit test) calls the
// same handlers with the objects.
func NewNodeIndex() *NodeIndex {
	x := &NodeIndex{seed: maphash.MakeSeed()}
	m := &nodeMaps{}
	for i := range shards {
		m.byName[i] = map[string]*NodeData{}
	}
	x.maps.Store(m)
	return x
}

// Lookup returns what the index knows about node, found by the Node object itself when the index
// holds it and by name otherwise (a snapshot a moment ahead of or behind the informer); nil when it
// knows nothing about the node.
func (x *NodeIndex) Lookup(node *corev1.Node) *NodeData {
	m := x.maps.Load()
	if d := m.byNode[nodeShard(node)].find(node); d != nil {
		return d
	}
	return m.byName[x.nameShard(node.Name)][node.Name]
}

// Get returns what the index knows about the node named name (nil: nothing).
func (x *NodeIndex) Get(name string) *NodeData {
	return x.maps.Load().byName[x.nameShard(name)][name]
}

// Derive registers fill with x and returns the key under which NodeData.Derived returns what it
// derived, as a *T. Whenever a node's data changes, the index allocates a zero T with it and calls
// fill with the new data and that T (with the index's lock held: fill must be quick and must not use
// the index); when fill reports false the node has no such value (Derived: nil). A plugin uses it to
// keep what it compiles from a node's data with its own arguments (LoadAware: the NodeMetric
// against the node's allocatable, with its thresholds and weights), prepared once per change instead
// of once per pod. Every node's data holds its value when Derive returns.
//
// The T is allocated in one piece with the NodeData (a struct type made at run time of the NodeData
// and each registered T), not on its own: Filter and Score, having found the data, read the value
// from memory next to it rather than from an allocation elsewhere in the heap (at 5000 nodes, a
// likely cache miss at each node visited).
func Derive[T any](x *NodeIndex, fill func(d *NodeData, v *T) bool) DerivedKey {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.derivers = append(x.derivers, &deriver{
		typ:  reflect.TypeFor[T](),
		fill: func(d *NodeData, v any) bool { return fill(d, v.(*T)) },
	})
	fields := []reflect.StructField{{Name: "Data", Type: reflect.TypeFor[NodeData]()}}
	for i, dv := range x.derivers {
		fields = append(fields, reflect.StructField{Name: "V" + strconv.Itoa(i), Type: dv.typ})
	}
	x.block = reflect.StructOf(fields)
	for _, shard := range x.maps.Load().byName {
		for name := range shard {
			x.update(name, func(*NodeData) {})
		}
	}
	return DerivedKey(len(x.derivers) - 1)
}

// newData allocates a node's data with room for each registered deriver's value (x.block); the
// caller holds mu.
func (x *NodeIndex) newData() (*NodeData, reflect.Value) {
	if x.block == nil {
		return &NodeData{}, reflect.Value{}
	}
	b := reflect.New(x.block).Elem()
	return b.Field(0).Addr().Interface().(*NodeData), b
}

// ClusterScopedResourceHandler keeps the index in step with a ClusterScopedResource informer (the
// Cache's): each CR is compiled (constraints.NewOffer) as it arrives, outside the index's lock.
func (x *NodeIndex) ClusterScopedResourceHandler() cache.ResourceEventHandler {
	return crHandler(x, func(csr *schedv1alpha1.ClusterScopedResource) func(*NodeData) {
		var offer *constraints.Offer
		if csr != nil {
			offer = constraints.NewOffer(csr)
		}
		return func(d *NodeData) { d.CR, d.Offer = csr, offer }
	})
}

// NodeMetricHandler keeps the index in step with a NodeMetric informer (the Cache's): each
// NodeMetric is compiled (constraints.NewLoad) as it arrives, outside the index's lock.
func (x *NodeIndex) NodeMetricHandler() cache.ResourceEventHandler {
	return crHandler(x, func(m *slov1alpha1.NodeMetric) func(*NodeData) {
		var load *constraints.Load
		if m != nil {
			load = constraints.NewLoad(m)
		}
		return func(d *NodeData) { d.Metric, d.Load = m, load }
	})
}

// crHandler sets each object an informer delivers into the data of the node of the same name, with
// the change compile returns for it (for a nil object after a delete).
func crHandler[T any, PT interface {
	*T
	metav1.Object
}](x *NodeIndex, compile func(PT) func(*NodeData)) cache.ResourceEventHandler {
	put := func(obj any) {
		if o, ok := obj.(PT); ok && o != nil {
			x.set(o.GetName(), compile(o))
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    put,
		UpdateFunc: func(_, obj any) { put(obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if o, ok := obj.(PT); ok && o != nil {
				x.set(o.GetName(), compile(nil))
			}
		},
	}
}

// NodeHandler keeps the index in step with a Node informer (the scheduler's).
func (x *NodeIndex) NodeHandler() cache.ResourceEventHandler {
	setNode := func(name string, n *corev1.Node) {
		x.set(name, func(d *NodeData) { d.Node = n })
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if n, ok := obj.(*corev1.Node); ok {
				setNode(n.Name, n)
			}
		},
		UpdateFunc: func(_, obj any) {
			if n, ok := obj.(*corev1.Node); ok {
				setNode(n.Name, n)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if n, ok := obj.(*corev1.Node); ok {
				setNode(n.Name, nil)
			}
		},
	}
}

func (x *NodeIndex) set(name string, change func(*NodeData)) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.update(name, change)
	if x.changed != nil {
		close(x.changed)
		x.changed = nil
	}
}

// Changed returns a channel that is closed when the index next changes (an event handler sets a
// node's Node, CR or NodeMetric). A caller that waits for the index to see an event takes it before
// looking, so that a change between its look and its wait is not missed, and waits on it rather
// than polling: the wait ends as the handler runs.
func (x *NodeIndex) Changed() <-chan struct{} {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.changed == nil {
		x.changed = make(chan struct{})
	}
	return x.changed
}

// Await waits, at most timeout, until ok holds, checking it at once and again at each change of
// the index (no polling), and reports whether it did.
func (x *NodeIndex) Await(timeout time.Duration, ok func() bool) bool {
	var deadline *time.Timer
	for {
		changed := x.Changed()
		if ok() {
			return true
		}
		if deadline == nil {
			deadline = time.NewTimer(timeout)
			defer deadline.Stop()
		}
		select {
		case <-changed:
		case <-deadline.C:
			return false
		}
	}
}

// holds reports whether the index holds, as what in returns for a node (nil: none), exactly the
// objects of objs (the same objects, by pointer, each under its name) and no other.
func (x *NodeIndex) holds(objs []any, in func(*NodeData) metav1.Object) bool {
	m := x.maps.Load()
	for _, obj := range objs {
		o, ok := obj.(metav1.Object)
		if !ok {
			return false
		}
		d := m.byName[x.nameShard(o.GetName())][o.GetName()]
		if d == nil || in(d) != o {
			return false
		}
	}
	n := 0
	for _, shard := range m.byName {
		for _, d := range shard {
			if in(d) != nil {
				n++
			}
		}
	}
	return n == len(objs)
}

// update publishes the node's data with change applied and every Derive function's result, in the
// shards of the maps that hold the node; the caller holds mu.
func (x *NodeIndex) update(name string, change func(*NodeData)) {
	old := x.maps.Load().byName[x.nameShard(name)][name]
	d, block := x.newData()
	var oldNode *corev1.Node
	if old != nil {
		*d = *old
		d.derived, d.inline = nil, [inlineDerived]any{} // derived again below
		oldNode = old.Node
	}
	change(d)
	switch {
	case d.Offer == nil:
		d.offer = constraints.Offer{}
	case d.Offer != &d.offer:
		// A new Offer, or the old data's copy: copied into this data's own memory.
		d.Offer.CopyTo(&d.offer)
		d.Offer = &d.offer
	}
	if d.Node == nil && d.CR == nil && d.Metric == nil {
		if old != nil {
			x.republish(func(e *mapEdit) {
				e.setName(name, nil)
				e.setNode(oldNode, nil)
			})
		}
		return
	}
	if len(x.derivers) <= inlineDerived {
		d.derived = d.inline[:len(x.derivers)]
	} else {
		d.derived = make([]any, len(x.derivers))
	}
	for i, dv := range x.derivers {
		if v := block.Field(i + 1).Addr().Interface(); dv.fill(d, v) {
			d.derived[i] = v
		}
	}
	x.republish(func(e *mapEdit) {
		e.setName(name, d)
		if oldNode != d.Node {
			e.setNode(oldNode, nil)
		}
		e.setNode(d.Node, d)
	})
}

// republish publishes the maps with edit's changes; the caller holds mu.
func (x *NodeIndex) republish(edit func(*mapEdit)) {
	next := *x.maps.Load()
	edit(&mapEdit{x: x, m: &next})
	x.maps.Store(&next)
}

// mapEdit changes a copy of the published maps: a by-name shard is copied the first time the edit
// touches it, a by-node table rebuilt at each change (nodeTable.with).
type mapEdit struct {
	x          *NodeIndex
	m          *nodeMaps
	nameCopied uint64
}

// setNode maps n to d (nil: removes n); a nil n is ignored.
func (e *mapEdit) setNode(n *corev1.Node, d *NodeData) {
	if n != nil {
		i := nodeShard(n)
		e.m.byNode[i] = e.m.byNode[i].with(n, d)
	}
}

// setName maps name to d (nil: removes name).
func (e *mapEdit) setName(name string, d *NodeData) {
	i := e.x.nameShard(name)
	if e.nameCopied&(1<<i) == 0 {
		e.m.byName[i] = maps.Clone(e.m.byName[i])
		e.nameCopied |= 1 << i
	}
	if d == nil {
		delete(e.m.byName[i], name)
	} else {
		e.m.byName[i][name] = d
	}
}
