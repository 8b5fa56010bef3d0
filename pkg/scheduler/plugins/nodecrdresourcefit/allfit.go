package nodecrdresourcefit

import (
	"strings"
	"sync"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/accord-sched/accord/pkg/scheduler/crcache"
)

// maxAllFit bounds the sets of requested resources allFit remembers; a full memo starts again.
const maxAllFit = 256

// allFit remembers, for each set of requested resources, whether every node of the scheduler's
// snapshot passes Filter for it. When one does, PreFilter returns Skip and the framework skips this
// plugin's Filter for the pod: in the usual cluster, where every node's CR enables what pods ask
// for, that is one Filter call fewer per (pod, node), the same verdicts.
//
// An answer holds while neither input of Filter changes: the Offers (the NodeIndex's
// OffersGeneration) and the snapshot's set of nodes. kube-scheduler's snapshot makes a new node list
// whenever a node comes or goes and otherwise updates the NodeInfos in place; an answer is kept with
// the list it was computed for (which keeps that list's array alive, so its address cannot be
// reused by a later list) and is used only for that same list.
type allFit struct {
	mu      sync.Mutex
	entries map[string]allFitEntry
	key     strings.Builder
}

type allFitEntry struct {
	nodes []fwk.NodeInfo
	gen   uint64
	fits  bool
}

// check reports whether no node of nodes is rejected for requested, asking rejects (Filter's own
// verdict) about each node when the answer is not known for the index's current Offers and nodes.
func (a *allFit) check(index *crcache.NodeIndex, requested []corev1.ResourceName, nodes []fwk.NodeInfo, rejects func(*corev1.Node) bool) bool {
	if len(nodes) == 0 {
		return false
	}
	gen := index.OffersGeneration()
	a.mu.Lock()
	a.key.Reset()
	for _, r := range requested {
		a.key.WriteString(string(r))
		a.key.WriteByte(0)
	}
	key := a.key.String()
	e, ok := a.entries[key]
	a.mu.Unlock()
	if ok && e.gen == gen && len(e.nodes) == len(nodes) && unsafe.SliceData(e.nodes) == unsafe.SliceData(nodes) {
		return e.fits
	}
	fits := true
	for _, ni := range nodes {
		if node := ni.Node(); node == nil || rejects(node) {
			fits = false
			break
		}
	}
	a.mu.Lock()
	if a.entries == nil || len(a.entries) >= maxAllFit {
		a.entries = map[string]allFitEntry{}
	}
	a.entries[key] = allFitEntry{nodes: nodes, gen: gen, fits: fits}
	a.mu.Unlock()
	return fits
}
