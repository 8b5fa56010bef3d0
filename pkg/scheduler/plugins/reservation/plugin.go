// Package reservation is accord-scheduler's Reservation plugin and the controller that places
// Reservations (scheduling.accord.dev/v1alpha1).
//
// The plugin (PreFilter, Filter, Reserve) makes an Available Reservation count as used capacity on its node for
// every pod except one of its owners, and places an owner pod on its reservation's node. The Placer
// (started by accord-scheduler when a profile enables the plugin) places each Pending Reservation as
// the profile named by its template's schedulerName would place the pod it stands for, with the
// profile's own Filter and Score plugins, and moves reservations on: Available, Bound once an owner
// pod is placed on the node, Expired when the TTL passes first, Failed when no node fits.
package reservation

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	compmetrics "k8s.io/component-base/metrics"
	resourcehelper "k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/clock"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/scheduler/crcache"
	"github.com/accord-sched/accord/pkg/scheduler/plugins/internal/rejections"
)

// Name is the plugin's name in KubeSchedulerConfiguration profiles.
const Name = "Reservation"

const stateKey fwk.StateKey = Name

// ReasonHeld is the Filter's reason for a node whose free room is held by reservations.
const ReasonHeld = "node(s) have their free resources held by reservations"

// Plugin is the Reservation scheduler plugin.
type Plugin struct {
	indexer cache.Indexer
	ledger  *Ledger
	handle  fwk.Handle
	clock   clock.PassiveClock
	// rejected counts Filter's rejections (accord_scheduler_filter_rejections_total).
	rejected compmetrics.CounterMetric
}

var (
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.FilterPlugin      = &Plugin{}
	_ fwk.ReservePlugin     = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
)

// NewFactory returns the plugin factory; the plugin reads Reservations from cache (through its
// owner and node indexes) and shares the scheduler's Ledger (LedgerOf) with the Placer. It has no
// args.
func NewFactory(cache *crcache.Cache) func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	return func(ctx context.Context, _ runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		inf, err := cache.Reservations(ctx, h)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Name, err)
		}
		ledger := LedgerOf(cache)
		if err := ledger.Follow(inf.Informer()); err != nil {
			return nil, fmt.Errorf("%s: %w", Name, err)
		}
		return New(inf.Informer().GetIndexer(), ledger, h, clock.RealClock{}), nil
	}
}

// New returns the plugin reading indexer (a Reservation indexer with crcache.ReservationIndexers)
// and ledger; h is the framework's handle (its snapshot is read in Reserve).
func New(indexer cache.Indexer, ledger *Ledger, h fwk.Handle, c clock.PassiveClock) *Plugin {
	return &Plugin{indexer: indexer, ledger: ledger, handle: h, clock: c, rejected: rejections.Counter(Name, rejections.HeldByReservation)}
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

type preFilterState struct {
	// held is, per node, the room held by reservations the pod does not consume.
	held map[string]*room
	// own is the reservation the pod consumes, if any.
	own *schedv1alpha1.Reservation
	// gen is the ledger's generation when held was read.
	gen uint64
	// want is what the pod asks for.
	want *room
}

func (s *preFilterState) Clone() fwk.StateData { return s }

// room is an amount of node resources, in the scheduler's units.
type room struct {
	milliCPU, memory, ephemeral int64
	pods                        int
	scalar                      map[corev1.ResourceName]int64
	names                       []string
}

func (r *room) add(rl corev1.ResourceList, pods int) {
	for name, q := range rl {
		switch name {
		case corev1.ResourceCPU:
			r.milliCPU += q.MilliValue()
		case corev1.ResourceMemory:
			r.memory += q.Value()
		case corev1.ResourceEphemeralStorage:
			r.ephemeral += q.Value()
		case corev1.ResourcePods:
		default:
			if r.scalar == nil {
				r.scalar = map[corev1.ResourceName]int64{}
			}
			r.scalar[name] += q.Value()
		}
	}
	r.pods += pods
}

// plus adds o's amounts to r.
func (r *room) plus(o *room) {
	r.milliCPU += o.milliCPU
	r.memory += o.memory
	r.ephemeral += o.ephemeral
	r.pods += o.pods
	for n, v := range o.scalar {
		if r.scalar == nil {
			r.scalar = map[corev1.ResourceName]int64{}
		}
		r.scalar[n] += v
	}
}

// PreFilter finds the reservations that hold room, and the one the pod consumes: an owner pod is
// only considered for its reservation's node.
func (p *Plugin) PreFilter(_ context.Context, state fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	now := p.clock.Now()
	gen := p.ledger.generation()
	own, err := p.ownOf(pod, now)
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	var held map[string]*room
	if own != nil {
		// Only its reservation's node is considered.
		held, _, err = p.held(now, own, own.Status.NodeName)
	} else {
		held, err = p.heldEverywhere(now)
	}
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	want := &room{}
	want.add(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}), 1)
	state.Write(stateKey, &preFilterState{own: own, held: held, gen: gen, want: want})
	if own != nil {
		return &fwk.PreFilterResult{NodeNames: sets.New(own.Status.NodeName)}, nil
	}
	if len(held) == 0 || p.fitsBesideHeld(want, held, nodes) {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return nil, nil
}

// fitsBesideHeld reports whether a pod asking for want fits beside the reservations on every node
// where they hold room, as this cycle's snapshot has the node (nodes, or the handle's snapshot),
// and no pod is nominated to any of those nodes: then Filter would accept every node, and is
// skipped. A cycle visits hundreds of nodes and live reservations hold room on a few: a Filter call
// on each node visited, for nothing, was most of what live reservations cost a pod. With a pod
// nominated to such a node Filter runs (the framework filters with the nominated pods added), and
// Reserve still checks the chosen node again after a placement since PreFilter.
func (p *Plugin) fitsBesideHeld(want *room, held map[string]*room, nodes []fwk.NodeInfo) bool {
	get := p.nodeInfos(nodes)
	for name, h := range held {
		ni := get(name)
		if ni == nil || ni.Node() == nil {
			// Not in this cycle's snapshot: no pod is placed there in this cycle.
			continue
		}
		if p.handle != nil && len(p.handle.NominatedPodsForNode(name)) > 0 {
			return false
		}
		if len(shortOf(want, ni, h)) > 0 {
			return false
		}
	}
	return true
}

// nodeInfos finds a node of this cycle's snapshot by name: through the handle's snapshot, or
// without a handle (unit tests) in nodes.
func (p *Plugin) nodeInfos(nodes []fwk.NodeInfo) func(name string) fwk.NodeInfo {
	if p.handle != nil && p.handle.SnapshotSharedLister() != nil {
		lister := p.handle.SnapshotSharedLister().NodeInfos()
		return func(name string) fwk.NodeInfo {
			ni, err := lister.Get(name)
			if err != nil {
				return nil
			}
			return ni
		}
	}
	byName := make(map[string]fwk.NodeInfo, len(nodes))
	for _, ni := range nodes {
		if ni.Node() != nil {
			byName[ni.Node().Name] = ni
		}
	}
	return func(name string) fwk.NodeInfo { return byName[name] }
}

// heldEverywhere is the room held per node by all reservations: computed once per change of the
// informer or the ledger (and again when one of them expires), shared read-only by the cycles.
func (p *Plugin) heldEverywhere(now time.Time) (map[string]*room, error) {
	cached, version := p.ledger.cachedHeld(now)
	if cached != nil {
		return cached, nil
	}
	held, validUntil, err := p.held(now, nil, "")
	if err != nil {
		return nil, err
	}
	p.ledger.cacheHeld(version, validUntil, held)
	return held, nil
}

// ownOf is the reservation pod consumes at now, if any: among those holding room that the pod
// may consume (Rank) and no other pod has consumed, its own first, then the oldest. They are found
// through the informer's owner index (the pod's name, its controller's UID), as the ledger knows
// them.
func (p *Plugin) ownOf(pod *corev1.Pod, now time.Time) (*schedv1alpha1.Reservation, error) {
	var best *schedv1alpha1.Reservation
	bestRank := NoMatch
	seen := map[types.UID]bool{}
	for _, key := range ownerKeys(pod) {
		rs, err := byIndex(p.indexer, crcache.IndexReservationOwner, key)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			if seen[r.UID] {
				continue
			}
			seen[r.UID] = true
			r = p.ledger.effective(r)
			if !Holding(r, now) {
				continue
			}
			if c, ok := p.ledger.consumedBy(r.UID); ok && c.uid != pod.UID {
				continue
			}
			rank := Rank(r, pod)
			if rank == NoMatch || (rank == RankSibling && p.predecessorRuns(r)) {
				continue
			}
			if best == nil || better(r, rank, best, bestRank) {
				best, bestRank = r, rank
			}
		}
	}
	return best, nil
}

// predecessorRuns reports whether the pod r was made for (a pod owner with a UID) still runs: found
// under its name with that UID and not terminating. Such a reservation waits for that pod's eviction
// and is not a sibling's to take yet: two pods of one Deployment migrated at once each get a
// reservation placed before either is evicted, and the first replacement must take the reservation
// of the pod that was evicted, not the other one (whose eviction would then find it consumed). The
// pod informer delivers the evicted pod's deletion before its replacement's creation, so by the time
// the replacement is scheduled the predecessor is seen terminating. Without a pod lister (a handle
// without informers) it reports false.
func (p *Plugin) predecessorRuns(r *schedv1alpha1.Reservation) bool {
	if p.handle == nil || p.handle.SharedInformerFactory() == nil {
		return false
	}
	return predecessorRuns(p.handle.SharedInformerFactory().Core().V1().Pods().Lister(), r)
}

// predecessorRuns reports whether the pod r was made for (a pod owner with a UID) is in lister,
// under its name with that UID, and not terminating. The Plugin's Reserve and the Placer's
// consumer both ask it before letting a sibling take r.
func predecessorRuns(lister corelisters.PodLister, r *schedv1alpha1.Reservation) bool {
	pods := lister.Pods(r.Namespace)
	for _, o := range r.Spec.Owners {
		if o.Pod == nil || o.Pod.UID == "" {
			continue
		}
		if pod, err := pods.Get(o.Pod.Name); err == nil && pod.UID == o.Pod.UID && pod.DeletionTimestamp == nil {
			return true
		}
	}
	return false
}

// held is the room held at now per node (on node only, when set) by the reservations holding room
// (Available in the informer through its node index, or placed in the ledger), except except and
// those a pod has consumed (that pod's room is counted by the scheduler's cache), and when the
// first of them expires.
func (p *Plugin) held(now time.Time, except *schedv1alpha1.Reservation, node string) (map[string]*room, time.Time, error) {
	out := map[string]*room{}
	seen := map[types.UID]bool{}
	validUntil := now.Add(time.Hour)
	add := func(r *schedv1alpha1.Reservation) {
		if seen[r.UID] || (except != nil && r.UID == except.UID) || !Holding(r, now) || (node != "" && r.Status.NodeName != node) {
			return
		}
		seen[r.UID] = true
		if exp := ExpireTime(r); exp.Before(validUntil) {
			validUntil = exp
		}
		if _, ok := p.ledger.consumedBy(r.UID); ok {
			return
		}
		rm := out[r.Status.NodeName]
		if rm == nil {
			rm = &room{}
			out[r.Status.NodeName] = rm
		}
		rm.plus(p.ledger.roomOf(r))
		rm.names = append(rm.names, r.Namespace+"/"+r.Name)
	}
	nodes := []string{node}
	if node == "" {
		nodes = p.indexer.ListIndexFuncValues(crcache.IndexReservationNode)
	}
	for _, n := range nodes {
		rs, err := byIndex(p.indexer, crcache.IndexReservationNode, n)
		if err != nil {
			return nil, now, err
		}
		for _, r := range rs {
			add(r)
		}
	}
	for _, r := range p.ledger.placements() {
		add(r)
	}
	for _, rm := range out {
		sort.Strings(rm.names)
	}
	return out, validUntil, nil
}

// PreFilterExtensions: none; the room held does not depend on other pods.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

func readState(state fwk.CycleState) (*preFilterState, error) {
	d, err := state.Read(stateKey)
	if err != nil {
		return nil, fmt.Errorf("reading %s state: %w", Name, err)
	}
	s, ok := d.(*preFilterState)
	if !ok {
		return nil, fmt.Errorf("%s state has type %T", Name, d)
	}
	return s, nil
}

// Filter rejects a node when the pod does not fit in what its allocatable leaves after the pods on
// it and the reservations held there that the pod does not consume.
func (p *Plugin) Filter(_ context.Context, state fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	s, err := readState(state)
	if err != nil {
		return fwk.AsStatus(err)
	}
	st := heldStatus(s.want, nodeInfo, s.held[nodeInfo.Node().Name])
	if st != nil {
		p.rejected.Inc()
	}
	return st
}

func heldStatus(want *room, nodeInfo fwk.NodeInfo, held *room) *fwk.Status {
	if held == nil {
		return nil
	}
	if short := shortOf(want, nodeInfo, held); len(short) > 0 {
		return fwk.NewStatus(fwk.Unschedulable, ReasonHeld).WithError(fmt.Errorf("short of %s on node %s, held by %s",
			strings.Join(short, ", "), nodeInfo.Node().Name, strings.Join(held.names, ", ")))
	}
	return nil
}

// Reserve, with the pod assumed on nodeName in the scheduler's cache: if a reservation was placed
// since the pod's PreFilter (the ledger's generation moved), the pod is checked again on nodeName
// against the room held now, and rejected if it no longer fits (kube-scheduler then forgets it and
// retries it). The reservation the pod consumes is recorded in the ledger, so that no other pod
// takes it and its room is no longer counted as held. See Ledger for why this serialises
// placements with the scheduling cycle.
func (p *Plugin) Reserve(_ context.Context, state fwk.CycleState, pod *corev1.Pod, nodeName string) *fwk.Status {
	s, err := readState(state)
	if err != nil {
		return fwk.AsStatus(err)
	}
	p.ledger.place.Lock()
	defer p.ledger.place.Unlock()
	if p.ledger.generation() != s.gen {
		nodeInfo, err := p.handle.SnapshotSharedLister().NodeInfos().Get(nodeName)
		if err != nil {
			return fwk.AsStatus(fmt.Errorf("%s: reading node %s from the snapshot: %w", Name, nodeName, err))
		}
		held, _, err := p.held(p.clock.Now(), s.own, nodeName)
		if err != nil {
			return fwk.AsStatus(err)
		}
		if st := heldStatus(s.want, nodeInfo, held[nodeName]); st != nil {
			return st
		}
	}
	if s.own != nil && !p.ledger.consume(s.own.UID, pod) {
		return fwk.NewStatus(fwk.Unschedulable, ReasonHeld).WithError(fmt.Errorf("reservation %s/%s was consumed by another pod", s.own.Namespace, s.own.Name))
	}
	return nil
}

// Unreserve gives back the reservation the pod consumed (its binding failed).
func (p *Plugin) Unreserve(_ context.Context, state fwk.CycleState, pod *corev1.Pod, _ string) {
	s, err := readState(state)
	if err != nil || s.own == nil {
		return
	}
	p.ledger.release(s.own.UID, pod)
}

// shortOf lists the resources a pod asking for want lacks on the node once held is taken away.
func shortOf(want *room, nodeInfo fwk.NodeInfo, held *room) []string {
	alloc, used := nodeInfo.GetAllocatable(), nodeInfo.GetRequested()
	var short []string
	check := func(name string, want, alloc, used, held int64) {
		if want > 0 && want > alloc-used-held {
			short = append(short, name)
		}
	}
	check(string(corev1.ResourceCPU), want.milliCPU, alloc.GetMilliCPU(), used.GetMilliCPU(), held.milliCPU)
	check(string(corev1.ResourceMemory), want.memory, alloc.GetMemory(), used.GetMemory(), held.memory)
	check(string(corev1.ResourceEphemeralStorage), want.ephemeral, alloc.GetEphemeralStorage(), used.GetEphemeralStorage(), held.ephemeral)
	check(string(corev1.ResourcePods), 1, int64(alloc.GetAllowedPodNumber()), int64(len(nodeInfo.GetPods())), int64(held.pods))
	names := make([]string, 0, len(want.scalar))
	for n := range want.scalar {
		names = append(names, string(n))
	}
	sort.Strings(names)
	for _, n := range names {
		rn := corev1.ResourceName(n)
		check(n, want.scalar[rn], alloc.GetScalarResources()[rn], used.GetScalarResources()[rn], held.scalar[rn])
	}
	return short
}

// EventsToRegister: a pod this plugin rejected may fit once a reservation changes (Bound, Expired,
// deleted) or room appears on a node (an assigned pod deleted, a node's allocatable grown).
func (p *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: crcache.ReservationResource, ActionType: fwk.Update | fwk.Delete}},
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete}},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable}},
	}, nil
}
