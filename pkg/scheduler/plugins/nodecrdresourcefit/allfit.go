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

// allFit remembers, for each set of requested resources, two answers about the nodes of the
// scheduler's snapshot:
//   - whether every node passes Filter. When one does, PreFilter returns Skip and the framework
//     skips this plugin's Filter for the pod: in the usual cluster, where every node's CR enables
//     what pods ask for, that is one Filter call fewer per (pod, node), the same verdicts.
//   - whether every node gets the same Score. When they do, PreScore returns Skip and the framework
//     skips this plugin's Score: the same number added to every feasible node's total changes
//     neither the order of the nodes nor their ties, so the scheduler picks among the same nodes.
//     Only the totals it reports are lower by that number, as for kube-scheduler's own plugins that
//     skip (PodTopologySpread without constraints).
//
// An answer holds while neither input of Filter and Score changes: the Offers (the NodeIndex's
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
	snapshotAnswer
}

// snapshotAnswer is what allFit knows of every node of a snapshot for one set of requested
// resources.
type snapshotAnswer struct {
	// fits: no node is rejected. sameScore: every node has the same score.
	fits, sameScore bool
}

// check answers for requested about every node of nodes, asking judge (Filter's verdict and Score's
// score) about each node when the answer is not known for the index's current Offers and nodes.
func (a *allFit) check(index *crcache.NodeIndex, requested []corev1.ResourceName, nodes []fwk.NodeInfo, judge func(*corev1.Node) (rejected bool, score int64)) snapshotAnswer {
	if len(nodes) == 0 {
		return snapshotAnswer{}
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
		return e.snapshotAnswer
	}
	ans := snapshotAnswer{fits: true, sameScore: true}
	var first int64
	for i, ni := range nodes {
		node := ni.Node()
		if node == nil {
			ans = snapshotAnswer{}
			break
		}
		rejected, score := judge(node)
		if i == 0 {
			first = score
		}
		ans.fits = ans.fits && !rejected
		ans.sameScore = ans.sameScore && score == first
		if !ans.fits && !ans.sameScore {
			break
		}
	}
	a.mu.Lock()
	if a.entries == nil || len(a.entries) >= maxAllFit {
		a.entries = map[string]allFitEntry{}
	}
	a.entries[key] = allFitEntry{nodes: nodes, gen: gen, snapshotAnswer: ans}
	a.mu.Unlock()
	return ans
}
