package simulator

import (
	"context"
	"hash/maphash"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
)

// Label index.
//
// InterPodAffinity's and PodTopologySpread's PreFilter, PreScore and Score read, of every node they
// walk, the pods that may match a label selector: the incoming pod's spread constraints and affinity
// terms against the node's pods, the node's pods' required anti-affinity terms against the incoming
// pod. They test every pod of the node, so a prediction tests every pod of the cluster (several
// times), although a selector with an equality requirement (`app: web`, or `app In (web, api)`)
// matches only pods that carry one of its key=value pairs. The label index keeps, per node of the
// snapshot, its pods sorted by a hash of each key=value pair they carry, and its pods with required
// anti-affinity by a hash of each pair their terms require. While a wrapped plugin runs for a
// prediction (see sharedPreFilter), it is handed narrowed NodeInfos (nodeView): the same node, whose
// GetPods, GetPodsWithAffinity and GetPodsWithRequiredAntiAffinity return only the pods that can
// match what the plugin will test them against; every other method is the node's. The plugins' own
// code still tests each pod it is handed, so a pod the index hands by mistake (a hash collision) is
// rejected as before: the narrowing needs only that every pod that matches is handed, and
// TestPreFilterReuseEquivalence checks the predictions equal the unnarrowed ones on random clusters.
//
// A selector without an equality requirement (only Exists, NotIn, DoesNotExist, an empty selector)
// cannot be narrowed: the plugin then gets the nodes as they are. So do the plugins for a pod whose
// spread constraints or terms do not parse (they report the error themselves).
//
// Which pods may match what, per plugin and extension point:
//   - PodTopologySpread PreFilter, PreScore, Score: the node's pods carrying a pair of an equality
//     requirement of one of the incoming pod's constraints' selectors (matchLabelKeys only add
//     requirements): its DoNotSchedule constraints' for PreFilter, its ScheduleAnyway ones' for
//     PreScore and Score. Every node is kept (a domain with no matching pod counts as zero). A pod
//     with constraints of its own but none of the kind an extension point reads is skipped there
//     by the plugin before it reads a node: no views are made. PreScore walks every node only to
//     count the domains of topology keys other than hostname (a node is its own hostname domain,
//     counted in Score): for a pod whose soft constraints all spread by hostname it is given the
//     scored nodes instead (spreadsByHostnameOnly). A pod without constraints of its
//     own gets the system defaults, built from Services and controllers the index does not read:
//     not narrowed.
//   - InterPodAffinity PreFilter: the incoming pod's required affinity and anti-affinity terms
//     against the node's pods (nodes without such a pod contribute nothing and are left out); the
//     node's pods with required anti-affinity whose terms may match the incoming pod's labels (a
//     term with an equality requirement k=v only if the pod carries k=v; others always).
//   - InterPodAffinity PreScore: without preferred terms of its own, the incoming pod is scored by
//     the existing pods' preferred terms and required affinity terms only: pods with required
//     anti-affinity alone contribute nothing. With preferred terms, also the pods that may match
//     them.
//
// The index is kept by node name and NodeInfo generation: an entry whose generation differs from
// its node's is built again (the node's pods only, when a prediction reads it). Admit keeps the
// origin's generation, and Snapshot.AssumePod the destination's, while they change their pods:
// Admit and revert drop those entries. Label keys are indexed once a selector requirement names
// them (at most maxIndexedKeys: selectors are tenants' input); a new key rebuilds the entries as
// they are read. Simulator.Warm (the descheduler calls it once its caches synced, before it reports
// ready) indexes the keys the selectors of the cluster's pods name and builds every entry, so the
// first cycle or event does not: a long-running descheduler then rebuilds only the entries of nodes
// whose pods changed. Access is serialized by Simulator.mu, but Score's reads run in parallel: only
// reads happen then (PreScore made the entries current).

// alwaysHash is the bucket of the pods with a required anti-affinity term the index cannot narrow:
// every incoming pod looks them up. pairHash never returns it.
const alwaysHash = 0

type labelIndex struct {
	seed maphash.Seed
	// keys are the label keys indexed (those an equality requirement named), keyList the same in
	// the order they were indexed, with the hash of each (keyHashes); keysVersion counts their
	// changes.
	keys        map[string]struct{}
	keyList     []string
	keyHashes   []uint64
	keysVersion int
	nodes       map[string]*nodeLabels
	lister      *snapshotLister

	// The views handed out, one buffer per use (PodTopologySpread's live from its PreScore through
	// its Score, while InterPodAffinity's PreScore takes its own), and byNI, PodTopologySpread's
	// PreScore views by the node they narrow, for its Score.
	spread, incoming, anti, scoring viewBuf
	byNI                            map[fwk.NodeInfo]*nodeView
	pairs                           []hashedPod

	// narrowed and passed count plugin calls given narrowed nodes and calls the index could not
	// narrow, skipped PodTopologySpread calls that read no node (spreadSkips), built the node
	// entries built or rebuilt (for tests and benchmarks).
	narrowed, passed, skipped, built int64
}

func newLabelIndex(lister *snapshotLister) *labelIndex {
	return &labelIndex{seed: maphash.MakeSeed(), keys: map[string]struct{}{}, nodes: map[string]*nodeLabels{}, lister: lister, byNI: map[fwk.NodeInfo]*nodeView{}}
}

type hashedPod struct {
	h  uint64
	pi fwk.PodInfo
}

// nodeLabels is the index of one node's pods.
type nodeLabels struct {
	// ni is the snapshot's NodeInfo it was built from, gen its generation then; keysVersion the
	// index's then (-1: dropped).
	ni          *framework.NodeInfo
	gen         int64
	keysVersion int
	// hashes (sorted) and pods: pods[i] carries a pair of an indexed key whose hash is hashes[i].
	hashes []uint64
	pods   []fwk.PodInfo
	// antiHashes (sorted) and anti: anti[i] has a required anti-affinity term requiring the pair
	// whose hash is antiHashes[i] (alwaysHash: a term the index cannot narrow).
	antiHashes []uint64
	anti       []fwk.PodInfo
	// scoring are the pods with affinity whose terms InterPodAffinity's PreScore reads for an
	// incoming pod without preferred terms: required affinity, preferred affinity or anti-affinity.
	scoring []fwk.PodInfo
}

// nodeView is a node as a wrapped plugin sees it during one call: see the package's Label index.
type nodeView struct {
	fwk.NodeInfo
	pods, withAffinity, withAntiAffinity []fwk.PodInfo
}

func (v *nodeView) GetPods() []fwk.PodInfo                         { return v.pods }
func (v *nodeView) GetPodsWithAffinity() []fwk.PodInfo             { return v.withAffinity }
func (v *nodeView) GetPodsWithRequiredAntiAffinity() []fwk.PodInfo { return v.withAntiAffinity }

func (x *labelIndex) pairHash(k, v string) uint64 {
	return x.pairHashOf(maphash.String(x.seed, k), v)
}

// pairHashOf is pairHash with the key's hash (maphash.String) given: the pair's hash mixes the
// key's and the value's (an odd multiplier keeps k=v and v=k apart).
func (x *labelIndex) pairHashOf(kh uint64, v string) uint64 {
	if s := kh*0x9e3779b97f4a7c15 ^ maphash.String(x.seed, v); s != alwaysHash {
		return s
	}
	return alwaysHash + 1
}

// addKey indexes the label key k.
func (x *labelIndex) addKey(k string) {
	x.keys[k] = struct{}{}
	x.keyList = append(x.keyList, k)
	x.keyHashes = append(x.keyHashes, maphash.String(x.seed, k))
	x.keysVersion++
}

// maxIndexedKeys bounds the label keys the index keeps pods by. The keys are those selectors'
// equality requirements name, and selectors are tenants' input: past the bound, a selector whose
// equality requirements all name keys not indexed yet is not narrowed (the plugins then walk every
// pod, as without the index), so no selector makes the index hold more than this many pairs per
// label of a pod, nor rebuild its entries more than this many times.
const maxIndexedKeys = 32

// equalityPairs returns the hashes of the pairs of one equality requirement of sel (a pod matching
// sel carries one of them), preferring a key already indexed, else indexing the first one's key
// (within maxIndexedKeys); false when sel has none the index can use.
func (x *labelIndex) equalityPairs(sel labels.Selector, out []uint64) ([]uint64, bool) {
	var pick *labels.Requirement
	for _, r := range equalities(sel) {
		if _, ok := x.keys[r.Key()]; ok {
			pick = r
			break
		}
		if pick == nil && len(x.keys) < maxIndexedKeys {
			pick = r
		}
	}
	if pick == nil {
		return out, false
	}
	if _, ok := x.keys[pick.Key()]; !ok {
		x.addKey(pick.Key())
	}
	return x.appendPairs(out, pick), true
}

// equalities are sel's equality requirements (=, ==, in); none for a nil selector or one that
// matches nothing.
func equalities(sel labels.Selector) []*labels.Requirement {
	if sel == nil {
		return nil
	}
	reqs, selectable := sel.Requirements()
	if !selectable {
		return nil
	}
	var out []*labels.Requirement
	for i := range reqs {
		switch reqs[i].Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			out = append(out, &reqs[i])
		}
	}
	return out
}

// appendPairs appends the hashes of r's key with each of its values.
func (x *labelIndex) appendPairs(out []uint64, r *labels.Requirement) []uint64 {
	for _, v := range r.ValuesUnsorted() {
		out = append(out, x.pairHash(r.Key(), v))
	}
	return out
}

// spreadPairs are the pairs for the selectors of pod's PodTopologySpread constraints whose
// whenUnsatisfiable is when ("": every constraint); false: not narrowed. PreFilter counts pods
// against the DoNotSchedule constraints only, PreScore and Score against the ScheduleAnyway ones.
func (x *labelIndex) spreadPairs(pod *corev1.Pod, when corev1.UnsatisfiableConstraintAction) ([]uint64, bool) {
	if len(pod.Spec.TopologySpreadConstraints) == 0 {
		return nil, false
	}
	var out []uint64
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if when != "" && c.WhenUnsatisfiable != when {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
		if err != nil {
			return nil, false
		}
		var ok bool
		if out, ok = x.equalityPairs(sel, out); !ok {
			return nil, false
		}
	}
	return dedupe(out), true
}

// spreadsByHostnameOnly reports whether every constraint of pod whose whenUnsatisfiable is when
// spreads by kubernetes.io/hostname. PodTopologySpread's PreScore then counts no pod of a node it
// was not given: a node is its own domain, counted in Score, and PreScore's walk over every node
// adds only to the counts of the other topology keys' domains (of which there are none). Its walk
// is given the nodes it scores instead (never none: an empty list would make it skip), with the
// same result.
func spreadsByHostnameOnly(pod *corev1.Pod, when corev1.UnsatisfiableConstraintAction) bool {
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == when && c.TopologyKey != corev1.LabelHostname {
			return false
		}
	}
	return true
}

// spreadSkips reports whether PodTopologySpread skips pod at the extension point whose constraints
// are when's (PreFilter: DoNotSchedule, PreScore: ScheduleAnyway): the pod has constraints of its
// own (no system defaults) and none of that kind, so the plugin reads no node and no view is made.
func spreadSkips(pod *corev1.Pod, when corev1.UnsatisfiableConstraintAction) bool {
	if len(pod.Spec.TopologySpreadConstraints) == 0 {
		return false
	}
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == when {
			return false
		}
	}
	return true
}

// preferredPairs are the pairs of pi's preferred affinity and anti-affinity terms; false when one
// of them cannot be narrowed.
func (x *labelIndex) preferredPairs(pi fwk.PodInfo) ([]uint64, bool) {
	var pairs []uint64
	for _, terms := range [][]fwk.WeightedAffinityTerm{pi.GetPreferredAffinityTerms(), pi.GetPreferredAntiAffinityTerms()} {
		for i := range terms {
			var ok bool
			if pairs, ok = x.equalityPairs(terms[i].Selector, pairs); !ok {
				return nil, false
			}
		}
	}
	return pairs, true
}

// termPairs are the pairs of terms; false when one of them cannot be narrowed.
func (x *labelIndex) termPairs(out []uint64, terms []fwk.AffinityTerm) ([]uint64, bool) {
	for i := range terms {
		var ok bool
		if out, ok = x.equalityPairs(terms[i].Selector, out); !ok {
			return out, false
		}
	}
	return out, true
}

func dedupe(hs []uint64) []uint64 {
	slices.Sort(hs)
	return slices.Compact(hs)
}

// entry returns ni's index, built again when the node changed.
func (x *labelIndex) entry(ni fwk.NodeInfo) *nodeLabels {
	name := ni.Node().Name
	e := x.nodes[name]
	if e == nil {
		e = &nodeLabels{gen: -1}
		x.nodes[name] = e
	}
	e.ni, _ = ni.(*framework.NodeInfo)
	if e.gen == ni.GetGeneration() && e.keysVersion == x.keysVersion {
		return e
	}
	e.gen, e.keysVersion = ni.GetGeneration(), x.keysVersion
	x.built++
	x.pairs = x.pairs[:0]
	for _, pi := range ni.GetPods() {
		// The indexed keys are few (often one or two): looking each up costs less than walking
		// every label of the pod, unless the pod has fewer labels than there are keys.
		lbls := pi.GetPod().Labels
		if len(x.keyList) <= len(lbls) {
			for i, k := range x.keyList {
				if v, ok := lbls[k]; ok {
					x.pairs = append(x.pairs, hashedPod{x.pairHashOf(x.keyHashes[i], v), pi})
				}
			}
			continue
		}
		for k, v := range lbls {
			if _, ok := x.keys[k]; ok {
				x.pairs = append(x.pairs, hashedPod{x.pairHash(k, v), pi})
			}
		}
	}
	e.hashes, e.pods = x.fill()
	x.pairs = x.pairs[:0]
	for _, pi := range ni.GetPodsWithRequiredAntiAffinity() {
		var hs []uint64
		terms := pi.GetRequiredAntiAffinityTerms()
		for i := range terms {
			var ok bool
			n := len(hs)
			if hs, ok = x.anyPairs(terms[i].Selector, hs); !ok {
				hs = append(hs[:n], alwaysHash)
			}
		}
		for _, h := range dedupe(hs) {
			x.pairs = append(x.pairs, hashedPod{h, pi})
		}
	}
	e.antiHashes, e.anti = x.fill()
	e.scoring = nil
	for _, pi := range ni.GetPodsWithAffinity() {
		if len(pi.GetRequiredAffinityTerms()) > 0 || len(pi.GetPreferredAffinityTerms()) > 0 || len(pi.GetPreferredAntiAffinityTerms()) > 0 {
			e.scoring = append(e.scoring, pi)
		}
	}
	return e
}

// anyPairs is equalityPairs for an existing pod's term, which does not add indexed keys (the pairs
// of the anti-affinity index are looked up with every pair of the incoming pod).
func (x *labelIndex) anyPairs(sel labels.Selector, out []uint64) ([]uint64, bool) {
	if eq := equalities(sel); len(eq) > 0 {
		return x.appendPairs(out, eq[0]), true
	}
	return out, false
}

// fill sorts x.pairs by hash into new hashes and pods (views handed out earlier in the prediction
// may still hold the old ones).
func (x *labelIndex) fill() ([]uint64, []fwk.PodInfo) {
	slices.SortFunc(x.pairs, func(a, b hashedPod) int {
		switch {
		case a.h < b.h:
			return -1
		case a.h > b.h:
			return 1
		}
		return 0
	})
	if len(x.pairs) == 0 {
		return nil, nil
	}
	hashes, pods := make([]uint64, len(x.pairs)), make([]fwk.PodInfo, len(x.pairs))
	for i, p := range x.pairs {
		hashes[i], pods[i] = p.h, p.pi
	}
	clear(x.pairs)
	return hashes, pods
}

// warm indexes the label keys the selectors of the nodes' pods name, as predictions of those pods
// would (their spread constraints', their required and preferred affinity terms'), and builds every
// node's entry. The pods of one workload (controller and template hash) name the same selectors:
// one of them is read.
func (x *labelIndex) warm(nodes []fwk.NodeInfo) {
	type workload struct {
		owner          types.UID
		template, revn string
	}
	seen := map[workload]struct{}{}
	for _, ni := range nodes {
		for _, pi := range ni.GetPods() {
			pod := pi.GetPod()
			if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
				w := workload{ref.UID, pod.Labels[appsv1.DefaultDeploymentUniqueLabelKey], pod.Labels[appsv1.ControllerRevisionHashLabelKey]}
				if _, ok := seen[w]; ok {
					continue
				}
				seen[w] = struct{}{}
			}
			x.spreadPairs(pod, "")
			x.termPairs(nil, pi.GetRequiredAffinityTerms())
			x.termPairs(nil, pi.GetRequiredAntiAffinityTerms())
			x.preferredPairs(pi)
		}
	}
	for _, ni := range nodes {
		x.entry(ni)
	}
}

// drop forgets a node's entry (Admit changed its pods but not its generation); views' position
// caches that still hold it see it dropped.
func (x *labelIndex) drop(name string) {
	if e := x.nodes[name]; e != nil {
		e.keysVersion = -1
		delete(x.nodes, name)
	}
}

// current reports whether e is ni's entry and up to date, without looking it up by name: the
// snapshot keeps a node's NodeInfo at the same address (UpdateSnapshot and Admit write through
// it), so a view buffer remembers the entry of each position of the lists it narrows.
func (x *labelIndex) current(e *nodeLabels, ni fwk.NodeInfo) bool {
	c, ok := ni.(*framework.NodeInfo)
	return ok && e != nil && e.ni == c && e.gen == c.Generation && e.keysVersion == x.keysVersion
}

// lookup returns the pods of (hashes, pods) under any of the sorted, distinct hs, each once.
func lookup(hashes []uint64, pods []fwk.PodInfo, hs []uint64) []fwk.PodInfo {
	var out []fwk.PodInfo
	runs := 0
	for _, h := range hs {
		i, found := slices.BinarySearch(hashes, h)
		if !found {
			continue
		}
		j := i + 1
		for j < len(hashes) && hashes[j] == h {
			j++
		}
		runs++
		if runs == 1 {
			out = pods[i:j:j]
			continue
		}
		out = append(out, pods[i:j]...)
	}
	if runs > 1 {
		out = uniquePods(out)
	}
	return out
}

// uniquePods drops repeated pods (a pod carrying two of the pairs looked up).
func uniquePods(pods []fwk.PodInfo) []fwk.PodInfo {
	seen := make(map[*corev1.Pod]struct{}, len(pods))
	out := pods[:0]
	for _, p := range pods {
		if _, ok := seen[p.GetPod()]; ok {
			continue
		}
		seen[p.GetPod()] = struct{}{}
		out = append(out, p)
	}
	return out
}

// candidatePairs are the hashes of pod's labels, with alwaysHash.
func (x *labelIndex) candidatePairs(pod *corev1.Pod) []uint64 {
	out := make([]uint64, 0, len(pod.Labels)+1)
	out = append(out, alwaysHash)
	for k, v := range pod.Labels {
		out = append(out, x.pairHash(k, v))
	}
	return dedupe(out)
}

// viewBuf holds the views of one use, handed out again at its next call.
type viewBuf struct {
	views []nodeView
	list  []fwk.NodeInfo
	// pos are the entries of the nodes of the list narrowed last, by position (see current).
	pos []*nodeLabels
}

// narrow hands out views of nodes in b: keep decides, from a node's entry, the view's lists and
// whether the node is listed at all.
func (x *labelIndex) narrow(b *viewBuf, nodes []fwk.NodeInfo, keep func(e *nodeLabels, v *nodeView) bool) []fwk.NodeInfo {
	if cap(b.views) < len(nodes) {
		b.views = make([]nodeView, len(nodes))
	}
	b.views = b.views[:len(nodes)]
	b.list = b.list[:0]
	if len(b.pos) != len(nodes) {
		b.pos = slices.Grow(b.pos[:0], len(nodes))[:len(nodes)]
	}
	n := 0
	for i, ni := range nodes {
		v := &b.views[n]
		*v = nodeView{NodeInfo: ni}
		e := b.pos[i]
		if !x.current(e, ni) {
			e = x.entry(ni)
			b.pos[i] = e
		}
		if keep(e, v) {
			b.list = append(b.list, v)
			n++
		}
	}
	clear(b.views[n:])
	x.narrowed++
	return b.list
}

// spreadViews are PodTopologySpread's nodes (every one) narrowed to the pods carrying one of pairs.
func (x *labelIndex) spreadViews(nodes []fwk.NodeInfo, pairs []uint64) []fwk.NodeInfo {
	return x.narrow(&x.spread, nodes, func(e *nodeLabels, v *nodeView) bool {
		v.pods = lookup(e.hashes, e.pods, pairs)
		return true
	})
}

// incomingViews are InterPodAffinity's nodes for the incoming pod's required terms: those with a
// pod carrying one of pairs.
func (x *labelIndex) incomingViews(nodes []fwk.NodeInfo, pairs []uint64) []fwk.NodeInfo {
	return x.narrow(&x.incoming, nodes, func(e *nodeLabels, v *nodeView) bool {
		v.pods = lookup(e.hashes, e.pods, pairs)
		return len(v.pods) > 0
	})
}

// antiAffinityViews are the nodes with a pod whose required anti-affinity may match a pod with
// the labels hashed in candidate.
func (x *labelIndex) antiAffinityViews(nodes []fwk.NodeInfo, candidate []uint64) []fwk.NodeInfo {
	return x.narrow(&x.anti, nodes, func(e *nodeLabels, v *nodeView) bool {
		v.withAntiAffinity = lookup(e.antiHashes, e.anti, candidate)
		return len(v.withAntiAffinity) > 0
	})
}

// scoringViews are InterPodAffinity's PreScore nodes: with the pods whose terms score an incoming
// pod, and (preferred: the incoming pod has preferred terms, whose pairs they are) the pods that
// may match the incoming pod's terms.
func (x *labelIndex) scoringViews(nodes []fwk.NodeInfo, preferred bool, pairs []uint64) []fwk.NodeInfo {
	return x.narrow(&x.scoring, nodes, func(e *nodeLabels, v *nodeView) bool {
		v.withAffinity = e.scoring
		if !preferred {
			return len(e.scoring) > 0
		}
		matching := lookup(e.hashes, e.pods, pairs)
		if len(e.scoring) > 0 && len(matching) > 0 {
			matching = uniquePods(append(slices.Clip(e.scoring), matching...))
		} else if len(matching) == 0 {
			matching = e.scoring
		}
		v.pods = matching
		return len(v.pods) > 0
	})
}

// indexSpread indexes PodTopologySpread's current views by the NodeInfo they narrow, for its Score
// (which gets the node); nil views: Score is not narrowed.
func (x *labelIndex) indexSpread(views []fwk.NodeInfo) {
	clear(x.byNI)
	for _, v := range views {
		nv := v.(*nodeView)
		x.byNI[nv.NodeInfo] = nv
	}
}

// prune drops the entries of nodes the snapshot no longer has, when there are more entries than
// nodes (called as a cycle starts).
func (x *labelIndex) prune(has func(name string) bool, numNodes int) {
	if len(x.nodes) <= numNodes {
		return
	}
	for name := range x.nodes {
		if !has(name) {
			x.drop(name)
		}
	}
}

var _ fwk.NodeInfo = &nodeView{}

// preFilter runs the wrapped plugin's PreFilter on the nodes narrowed for pod.
func (w *sharedPreFilter) preFilter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	x := w.idx
	if x == nil {
		return w.pre.PreFilter(ctx, state, pod, nodes)
	}
	switch w.Name() {
	case names.PodTopologySpread:
		if spreadSkips(pod, corev1.DoNotSchedule) {
			x.skipped++
			return w.pre.PreFilter(ctx, state, pod, nodes)
		}
		if pairs, ok := x.spreadPairs(pod, corev1.DoNotSchedule); ok {
			return w.pre.PreFilter(ctx, state, pod, x.spreadViews(nodes, pairs))
		}
	case names.InterPodAffinity:
		pi, err := framework.NewPodInfo(pod)
		if err != nil {
			break
		}
		l := x.lister
		anti, err := l.HavePodsWithRequiredAntiAffinityList()
		if err != nil {
			break
		}
		anti = x.antiAffinityViews(anti, x.candidatePairs(pod))
		if len(pi.GetRequiredAffinityTerms())+len(pi.GetRequiredAntiAffinityTerms()) > 0 {
			pairs, ok := x.termPairs(nil, pi.GetRequiredAffinityTerms())
			if ok {
				pairs, ok = x.termPairs(pairs, pi.GetRequiredAntiAffinityTerms())
			}
			if ok {
				nodes = x.incomingViews(nodes, dedupe(pairs))
			}
		}
		l.narrowed.withAntiAffinity = &anti
		defer func() { l.narrowed.withAntiAffinity = nil }()
		return w.pre.PreFilter(ctx, state, pod, nodes)
	}
	x.passed++
	return w.pre.PreFilter(ctx, state, pod, nodes)
}

// narrowedPreScore runs the wrapped plugin's PreScore with the lists it reads narrowed for pod
// (PodTopologySpread's Score then reads the same views).
func (w *sharedPreFilter) narrowedPreScore(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	x := w.idx
	if x == nil {
		return w.preScore.PreScore(ctx, state, pod, nodes)
	}
	l := x.lister
	switch w.Name() {
	case names.PodTopologySpread:
		x.indexSpread(nil)
		if spreadSkips(pod, corev1.ScheduleAnyway) {
			x.skipped++
			return w.preScore.PreScore(ctx, state, pod, nodes)
		}
		pairs, ok := x.spreadPairs(pod, corev1.ScheduleAnyway)
		if !ok {
			break
		}
		all := nodes
		if len(nodes) == 0 || !spreadsByHostnameOnly(pod, corev1.ScheduleAnyway) {
			var err error
			if all, err = l.List(); err != nil {
				break
			}
		}
		views := x.spreadViews(all, pairs)
		x.indexSpread(views)
		l.narrowed.all = &views
		defer func() { l.narrowed.all = nil }()
		return w.preScore.PreScore(ctx, state, pod, nodes)
	case names.InterPodAffinity:
		a := pod.Spec.Affinity
		preferred := a != nil && (a.PodAffinity != nil && len(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 ||
			a.PodAntiAffinity != nil && len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0)
		if !preferred {
			withAffinity, err := l.HavePodsWithAffinityList()
			if err != nil {
				break
			}
			views := x.scoringViews(withAffinity, false, nil)
			l.narrowed.withAffinity = &views
			defer func() { l.narrowed.withAffinity = nil }()
			return w.preScore.PreScore(ctx, state, pod, nodes)
		}
		pi, err := framework.NewPodInfo(pod)
		if err != nil {
			break
		}
		pairs, ok := x.preferredPairs(pi)
		if !ok {
			break
		}
		all, err := l.List()
		if err != nil {
			break
		}
		views := x.scoringViews(all, true, dedupe(pairs))
		l.narrowed.all = &views
		defer func() { l.narrowed.all = nil }()
		return w.preScore.PreScore(ctx, state, pod, nodes)
	}
	x.passed++
	return w.preScore.PreScore(ctx, state, pod, nodes)
}
