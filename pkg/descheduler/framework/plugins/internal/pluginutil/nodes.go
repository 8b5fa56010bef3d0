package pluginutil

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// CycleNodes lists the nodes matching a selector at most once per descheduling cycle, for code that
// looks at every node for each candidate (DefaultEvictor's nodeFit, RemoveDuplicates' NodeVerdict):
// at 5000 nodes a fresh lister List costs about 1.5 ms, paid again for every candidate.
//
// Inside a cycle (between Begin and End, which the plugin's CycleHook calls) List returns the nodes
// as they were at its first call in the cycle: the same view RunCycle gives the plugins, whose node
// list is also taken once at the start. Outside a cycle (the event-triggered controller) every List
// reads the lister afresh. The returned slice is shared: callers must not change it. Begin and End
// on a nil CycleNodes do nothing, so a plugin without one can call them unconditionally.
type CycleNodes struct {
	lister corelisters.NodeLister
	sel    labels.Selector

	mu      sync.Mutex
	inCycle bool
	nodes   []*corev1.Node
}

// NewCycleNodes lists lister's nodes matching sel (nil: every node).
func NewCycleNodes(lister corelisters.NodeLister, sel labels.Selector) *CycleNodes {
	if sel == nil {
		sel = labels.Everything()
	}
	return &CycleNodes{lister: lister, sel: sel}
}

// Begin starts a cycle: the next List reads the lister and later ones reuse its answer.
func (c *CycleNodes) Begin() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inCycle, c.nodes = true, nil
}

// End ends the cycle and drops the list.
func (c *CycleNodes) End() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inCycle, c.nodes = false, nil
}

// List returns the matching nodes: the cycle's list inside a cycle, a fresh one outside.
func (c *CycleNodes) List() ([]*corev1.Node, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inCycle && c.nodes != nil {
		return c.nodes, nil
	}
	nodes, err := c.lister.List(c.sel)
	if err != nil {
		return nil, err
	}
	if c.inCycle {
		c.nodes = nodes
	}
	return nodes, nil
}
