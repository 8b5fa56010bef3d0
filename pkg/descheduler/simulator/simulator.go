// Package simulator answers, before an eviction, "where would kube-scheduler put this pod if it
// were evicted now?" with kube-scheduler's own code: its scheduling framework, built from the same
// KubeSchedulerConfiguration accord-scheduler runs (kube-scheduler's in-tree plugins plus Accord's
// out-of-tree ones, with their args), over kube-scheduler's own node cache and snapshot.
//
// The cache is fed from the descheduler's informers (nodes, and pods bound to a node and not
// terminal, as kube-scheduler's event handlers feed it). BeginCycle brings the snapshot up to date
// with cache.UpdateSnapshot, which copies only the NodeInfos that changed since the previous cycle.
// Predict removes the candidate pod from its node in the snapshot, runs PreFilter, Filter (stopping
// once enough feasible nodes are found, as percentageOfNodesToScore makes the scheduler stop),
// PreScore and Score, picks the best node and restores the snapshot. Admit records an eviction the
// caller is about to make: the pod moves, in the snapshot, to its predicted node, so later
// predictions of the same cycle never count on the room it takes. EndCycle (or the next BeginCycle)
// reverts those moves from an undo log, so the snapshot again equals the cache exactly and the next
// incremental update stays correct.
//
// Within a cycle the candidates of one workload share InterPodAffinity's and PodTopologySpread's
// PreFilter state, the two PreFilters that walk the whole cluster (reuse.go). A workload is what
// those plugins read of a pod: profile, namespace, labels, affinity, topology spread constraints,
// node selector and tolerations (any two pods equal in these share, whatever their owner). Its
// state (the "base") is computed once over the snapshot as it is, at the workload's second
// candidate of the cycle (the first runs the plugins' PreFilter itself: a batch of one node's
// violators is mostly of distinct workloads, and a base read by no later candidate only costs);
// each later candidate gets a clone from which the plugins' own PreFilterExtensions.RemovePod took
// the candidate out, as kube-scheduler's preemption takes out victims; every other PreFilter plugin
// runs per candidate. When the bases are dropped or updated:
//   - BeginCycle and EndCycle drop them all, and so does a Namespace event (InterPodAffinity reads
//     namespaces' labels); outside a cycle nothing is shared.
//   - Admit moves a pod: InterPodAffinity's bases follow it with RemovePod and AddPod (exact);
//     its Skip bases are dropped when the moved pod's required anti-affinity matches the workload.
//     PodTopologySpread's AddPod only approximates the minimum it keeps, so its bases that the moved
//     pod counts in (same namespace, labels matching a constraint's selector) are dropped; the
//     others do not change.
//   - Pod, node and custom-resource events during a cycle reach the cache, not the snapshot, and
//     neither plugin reads custom resources: they change no base. (The other plugins, Accord's
//     included, still run their PreFilter per candidate and see them as before.)
//   - A terminating candidate (PodTopologySpread does not count it) and a workload beyond the
//     256 kept per cycle are simulated without sharing; so is a PodTopologySpread configured with
//     hard default constraints (built from Service, ReplicaSet... listers the bases do not follow).
//
// Every candidate, shared state or not, reads only the pods a label selector can match: the
// label index (labelindex.go) keeps each node's pods by the key=value pairs they carry and by the
// pairs their required anti-affinity terms require, and InterPodAffinity and PodTopologySpread
// (PreFilter, PreScore, Score) are handed narrowed views of the nodes, whose pod lists hold only the
// pods with a pair of an equality requirement of the selectors they will test (a selector without
// one is not narrowed). The plugins still test each pod they get; an entry is built again when its
// node's pods change.
//
// TestPreFilterReuseEquivalence checks, on random clusters with moves admitted, that every
// prediction, with the reuse and the label index, and with the label index alone, equals a fresh
// simulation's (Options.NoPreFilterReuse, Options.NoLabelIndex).
package simulator

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"

	"github.com/accord-sched/accord/pkg/crdcheck"
	accordinformers "github.com/accord-sched/accord/pkg/generated/informers/externalversions"
	"github.com/accord-sched/accord/pkg/scheduler/crcache"
	"github.com/accord-sched/accord/pkg/scheduler/frameworks"
	schedplugins "github.com/accord-sched/accord/pkg/scheduler/plugins"
)

// DefaultSyncTimeout bounds the wait, before the first snapshot, for the informers the simulator
// and the scheduler plugins read.
const DefaultSyncTimeout = time.Minute

// The scheduler's bounds on how many feasible nodes it looks for (pkg/scheduler).
const (
	minFeasibleNodesToFind           = 100
	minFeasibleNodesPercentageToFind = 5
)

// Options are what a Simulator is built from.
type Options struct {
	// Config is the scheduler configuration (see LoadConfig). Nil means kube-scheduler's defaults.
	Config *schedconfig.KubeSchedulerConfiguration
	// FallbackProfile is the profile (schedulerName) used for a pod whose spec.schedulerName names
	// no profile. Empty: such pods are reported infeasible ("no profile"). Profiles are those of
	// Config plus kube-scheduler's stock default-scheduler profile when Config has none by that name.
	FallbackProfile string
	// Client, KubeConfig and InformerFactory are handed to the scheduler plugins, as kube-scheduler
	// hands its own. The simulator feeds its cache from InformerFactory's node and pod informers.
	Client          clientset.Interface
	KubeConfig      *rest.Config
	InformerFactory informers.SharedInformerFactory
	// AccordInformerFactory is the factory of Accord's CR informers. When set, the simulated
	// scheduler has accord-scheduler's plugins (Plugins) besides kube-scheduler's in-tree ones, their
	// NodeIndex fed by this factory, and the simulator waits for it (as for InformerFactory) before
	// the first snapshot. When nil, a configuration that enables an Accord plugin is rejected.
	AccordInformerFactory accordinformers.SharedInformerFactory
	// CRDs tells which of Accord's CRDs the cluster serves (nil: all). A simulated profile that
	// enables an Accord plugin whose CRD is not served is an error naming both.
	CRDs crdcheck.Availability
	// Plugins are the Accord plugins registered with the simulated scheduler; nil means
	// accord-scheduler's own list, schedplugins.Descriptors().
	Plugins []schedplugins.Descriptor
	// Parallelism overrides the configuration's parallelism when positive.
	Parallelism int
	// SyncTimeout defaults to DefaultSyncTimeout.
	SyncTimeout time.Duration
	// NoPreFilterReuse turns off the sharing of InterPodAffinity's and PodTopologySpread's
	// PreFilter state between the candidates of one workload within a cycle (reuse.go): every
	// candidate then runs every PreFilter plugin over the whole snapshot.
	NoPreFilterReuse bool
	// NoLabelIndex turns off the label index (labelindex.go): InterPodAffinity and
	// PodTopologySpread then test every pod of every node they walk.
	NoLabelIndex bool
}

// Prediction is where the scheduler would place a pod evicted now.
type Prediction struct {
	// Profile is the scheduler profile (schedulerName) the pod was simulated with.
	Profile string
	// CurrentNode is the node the pod is on.
	CurrentNode string
	// Feasible: at least one node (the current one included) passes every Filter.
	Feasible bool
	// Node is the node the scheduler would pick ("" when not Feasible) and Score its total weighted
	// score. When the current node ties for the best score, Node is the current node.
	Node  string
	Score int64
	// CurrentNodeFeasible and CurrentNodeScore describe the current node (the score only when
	// feasible).
	CurrentNodeFeasible bool
	CurrentNodeScore    int64
	// FeasibleNodes and EvaluatedNodes count the nodes found feasible and the nodes filtered.
	FeasibleNodes  int
	EvaluatedNodes int
	// Reason explains the outcome: the scheduler's own "0/N nodes are available: ..." message when
	// nothing fits, a tie with the current node, or "no profile".
	Reason string
}

// Moves reports whether the pod would be placed on a node other than the one it is on.
func (p Prediction) Moves() bool { return p.Feasible && p.Node != p.CurrentNode }

// NodeWarmer is implemented by a scheduler plugin that keeps, per node, state its Filter or Score
// builds at the node's first visit and reuses while the node's pods are unchanged (Accord's
// LoadAware: the usage estimate of the node's pods). Simulator.Warm hands it the snapshot's nodes,
// so the first predictions after start do not build it one node at a time. Nothing it builds may
// change a verdict: it is what the plugin's first visits would build.
type NodeWarmer interface {
	WarmNodes(nodes []fwk.NodeInfo)
}

// Simulator predicts placements with kube-scheduler's framework. It is safe for concurrent use;
// predictions are serialized.
type Simulator struct {
	cache      internalcache.Cache
	frameworks map[string]framework.Framework
	// crs feeds the Accord plugins' NodeIndex; nil without Options.AccordInformerFactory.
	crs *crcache.Cache
	// reuse shares PreFilter state between the candidates of a workload; nil with
	// Options.NoPreFilterReuse.
	reuse *reuseCache
	// index narrows the nodes InterPodAffinity and PodTopologySpread read; nil with
	// Options.NoLabelIndex.
	index *labelIndex
	// warmers are the frameworks' plugins that keep per-node state (NodeWarmer).
	warmers     []NodeWarmer
	fallback    string
	percentage  int32
	syncTimeout time.Duration
	factories   []interface {
		WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool
	}
	podReg, nodeReg cache.ResourceEventHandlerRegistration

	// events counts cache updates from informer events (for tests and benchmarks).
	events atomic.Int64

	mu       sync.Mutex
	snapshot *internalcache.Snapshot
	// lister is what the frameworks read the snapshot through.
	lister    *snapshotLister
	synced    bool
	inCycle   bool
	nextStart int
	// feasibleBuf and statusBuf are filter's buffers, reused by the next prediction (mu serializes
	// predictions; nothing a prediction returns refers to them).
	feasibleBuf []fwk.NodeInfo
	statusBuf   []*fwk.Status
	// The undo log of the cycle: the NodeInfos modified by Admit, as they were before (the snapshot
	// holds modified clones in their place), and the pods assumed on their predicted nodes.
	saved    map[string]framework.NodeInfo
	assumed  []*corev1.Pod
	admitted sets.Set[string]
}

// New builds the frameworks of every profile and the cache, and registers the cache's event
// handlers with opts.InformerFactory. Informers the plugins need are requested from the factories:
// start them after New. The goroutines New starts stop when ctx is done.
func New(ctx context.Context, opts Options) (*Simulator, error) {
	if opts.InformerFactory == nil {
		return nil, errors.New("simulator: an informer factory is required")
	}
	cfg := opts.Config
	if cfg == nil {
		c, err := LoadConfig("")
		if err != nil {
			return nil, err
		}
		cfg = c
	}
	profiles, err := withDefaultProfile(cfg)
	if err != nil {
		return nil, err
	}
	var outOfTree frameworkruntime.Registry
	var crs *crcache.Cache
	if opts.AccordInformerFactory != nil {
		descriptors := opts.Plugins
		if descriptors == nil {
			descriptors = schedplugins.Descriptors()
		}
		crs = crcache.NewForFactory(opts.AccordInformerFactory, opts.CRDs)
		outOfTree = schedplugins.Registry(descriptors, crs)
	}
	reg, err := frameworks.Registry(outOfTree)
	if err != nil {
		return nil, err
	}
	parallelism := int(cfg.Parallelism)
	if opts.Parallelism > 0 {
		parallelism = opts.Parallelism
	}
	// kube-scheduler's cache and framework record into kube-scheduler's metrics, which exist only
	// once registered (with component-base's legacy registry, once per process, as kube-scheduler
	// does; the descheduler does not serve that registry).
	schedmetrics.Register()
	s := &Simulator{
		cache:       internalcache.New(ctx, nil, feature.DefaultFeatureGate.Enabled(features.GenericWorkload)),
		snapshot:    internalcache.NewEmptySnapshot(),
		crs:         crs,
		fallback:    opts.FallbackProfile,
		syncTimeout: opts.SyncTimeout,
		saved:       map[string]framework.NodeInfo{},
		admitted:    sets.New[string](),
	}
	s.lister = &snapshotLister{snapshot: s.snapshot}
	if !opts.NoLabelIndex {
		s.index = newLabelIndex(s.lister)
	}
	if cfg.PercentageOfNodesToScore != nil {
		s.percentage = *cfg.PercentageOfNodesToScore
	}
	if s.syncTimeout <= 0 {
		s.syncTimeout = DefaultSyncTimeout
	}
	wrapped := map[fwk.Handle][]*sharedPreFilter{}
	if !opts.NoPreFilterReuse || !opts.NoLabelIndex {
		wrapReusable(reg, klog.FromContext(ctx), func(h fwk.Handle, w *sharedPreFilter) { wrapped[h] = append(wrapped[h], w) })
	}
	// Every plugin instance that keeps per-node state is warmed by Warm.
	for name, factory := range reg {
		reg[name] = func(ctx context.Context, args runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
			p, err := factory(ctx, args, h)
			if nw, ok := p.(NodeWarmer); ok && err == nil {
				s.warmers = append(s.warmers, nw)
			}
			return p, err
		}
	}
	if s.frameworks, err = frameworks.Build(ctx, frameworks.Options{
		Profiles: profiles, ComponentConfigVersion: cfg.APIVersion, Registry: reg,
		Client: opts.Client, KubeConfig: opts.KubeConfig, InformerFactory: opts.InformerFactory,
		Snapshot: s.lister, Parallelism: parallelism, LogKey: "simulatedProfile",
	}); err != nil {
		return nil, err
	}
	if s.fallback != "" && s.frameworks[s.fallback] == nil {
		return nil, fmt.Errorf("fallback profile %q is not a profile of the scheduler configuration", s.fallback)
	}
	for _, ws := range wrapped {
		for _, w := range ws {
			w.idx = s.index
		}
	}
	if !opts.NoPreFilterReuse {
		if err := s.setUpReuse(opts.InformerFactory, wrapped); err != nil {
			return nil, err
		}
	}
	s.factories = append(s.factories, opts.InformerFactory)
	if opts.AccordInformerFactory != nil {
		s.factories = append(s.factories, opts.AccordInformerFactory)
	}
	h := &handlers{s: s, logger: klog.FromContext(ctx).WithName("scheduler-simulator")}
	if s.nodeReg, err = opts.InformerFactory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: h.addNode, UpdateFunc: h.updateNode, DeleteFunc: h.deleteNode,
	}); err != nil {
		return nil, err
	}
	if s.podReg, err = opts.InformerFactory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: h.addPod, UpdateFunc: h.updatePod, DeleteFunc: h.deletePod,
	}); err != nil {
		return nil, err
	}
	return s, nil
}

// Profiles returns the names of the simulated profiles.
func (s *Simulator) Profiles() []string {
	names := make([]string, 0, len(s.frameworks))
	for n := range s.frameworks {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// CacheEvents returns how many informer events have updated the cache.
func (s *Simulator) CacheEvents() int64 { return s.events.Load() }

// HasSynced reports whether the simulator's handlers have been delivered the node and pod
// informers' initial lists (its scheduler cache holds every node and bound pod the informers
// listed) and the Accord plugins' NodeIndex (its custom-resource informers) has synced. It does not
// wait.
func (s *Simulator) HasSynced() bool {
	return s.nodeReg.HasSynced() && s.podReg.HasSynced() && (s.crs == nil || s.crs.HasSynced())
}

// waitSynced waits, once, for the simulator's handlers to have seen the informers' initial lists
// and for every started informer of the factories (the plugins' listers) to sync.
func (s *Simulator) waitSynced(ctx context.Context) error {
	if s.synced {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.syncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), s.nodeReg.HasSynced, s.podReg.HasSynced) {
		return fmt.Errorf("the node and pod informers did not sync within %s (are the informer factories started?)", s.syncTimeout)
	}
	if s.crs != nil && !cache.WaitForCacheSync(ctx.Done(), s.crs.HasSynced) {
		return fmt.Errorf("the Accord plugins' custom-resource informers did not sync within %s (is the Accord informer factory started?)", s.syncTimeout)
	}
	for _, f := range s.factories {
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				return fmt.Errorf("the %v informer did not sync within %s", typ, s.syncTimeout)
			}
		}
	}
	s.synced = true
	return nil
}

// BeginCycle starts a cycle: it reverts what the previous cycle admitted (if EndCycle was not
// called) and brings the snapshot up to date with the cache, copying only the nodes that changed.
// The first call waits for the informers.
func (s *Simulator) BeginCycle(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revert(klog.FromContext(ctx))
	if err := s.refresh(ctx); err != nil {
		return err
	}
	s.inCycle = true
	return nil
}

// Warm builds ahead of time what the first prediction would otherwise build (framework.Warmer):
// it waits for the informers (see BeginCycle), brings the snapshot up to date, hands its nodes to
// the plugins that keep per-node state (NodeWarmer) and, with the label index, indexes the label
// keys the selectors of the snapshot's pods name and builds every node's entry. Nothing it builds
// changes a prediction: it is what the first predictions build as they go.
func (s *Simulator) Warm(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(ctx); err != nil {
		return err
	}
	nodes, err := s.snapshot.List()
	if err != nil {
		return err
	}
	if len(s.warmers) > 0 {
		start := time.Now()
		for _, w := range s.warmers {
			w.WarmNodes(nodes)
		}
		klog.FromContext(ctx).V(2).Info("Scheduler plugins' per-node state built", "plugins", len(s.warmers), "nodes", len(nodes), "duration", time.Since(start))
	}
	if s.index == nil {
		return nil
	}
	s.index.warm(nodes)
	klog.FromContext(ctx).V(2).Info("Label index built", "nodes", len(nodes), "keys", len(s.index.keys))
	return nil
}

// EndCycle reverts the moves admitted during the cycle; the snapshot equals the cache again as of
// BeginCycle.
func (s *Simulator) EndCycle(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revert(klog.FromContext(ctx))
	s.inCycle = false
}

func (s *Simulator) refresh(ctx context.Context) error {
	if err := s.waitSynced(ctx); err != nil {
		return err
	}
	// An event-triggered controller predicts from its own handler of an informer whose event the
	// Accord plugins' NodeIndex (another handler) may not have been given yet: its pods would be
	// judged on the node's old ClusterScopedResource, or not, as the two handlers happen to run.
	if s.crs != nil && !s.crs.AwaitCaughtUp(crcache.CatchUpTimeout) {
		klog.FromContext(ctx).V(2).Info("The Accord plugins' NodeIndex has not caught up with its informers; simulating with it as it is", "waited", crcache.CatchUpTimeout)
	}
	if err := s.cache.UpdateSnapshot(klog.FromContext(ctx), s.snapshot); err != nil {
		return err
	}
	if s.index != nil {
		if all, err := s.snapshot.List(); err == nil {
			s.index.prune(func(name string) bool { return s.nodeInfo(name) != nil }, len(all))
		}
	}
	return nil
}

func (s *Simulator) revert(logger klog.Logger) {
	for _, p := range s.assumed {
		if err := s.snapshot.ForgetPod(logger, p); err != nil {
			logger.Error(err, "Forgetting a simulated placement", "pod", klog.KObj(p), "node", p.Spec.NodeName)
		}
	}
	for name, saved := range s.saved {
		if s.index != nil {
			// The node gets its generation back with its pods (see Admit).
			s.index.drop(name)
		}
		if ni := s.nodeInfo(name); ni != nil {
			*ni = saved
		}
	}
	s.assumed = s.assumed[:0]
	clear(s.saved)
	s.admitted.Clear()
	s.lister.reset()
	if s.reuse != nil && len(s.reuse.workloads) > 0 {
		logger.V(4).Info("PreFilter state shared between the candidates of a workload", "workloads", len(s.reuse.workloads), "basesComputedTotal", s.reuse.computed, "statesSharedTotal", s.reuse.reused)
	}
	s.reuse.clear()
}

// nodeInfo returns the snapshot's NodeInfo of a node, nil when there is none.
func (s *Simulator) nodeInfo(name string) *framework.NodeInfo {
	ni, err := s.snapshot.Get(name)
	if err != nil {
		return nil
	}
	concrete, _ := ni.(*framework.NodeInfo)
	return concrete
}

// modify makes the snapshot's NodeInfo of a node safe to change for the rest of the cycle: the
// first time in a cycle it puts a clone in its place (keeping the pointer, which the snapshot's
// lists hold) and records the original in the undo log.
func (s *Simulator) modify(name string) *framework.NodeInfo {
	ni := s.nodeInfo(name)
	if ni == nil {
		return nil
	}
	if _, ok := s.saved[name]; !ok {
		s.saved[name] = *ni
		*ni = *ni.SnapshotConcrete()
	}
	return ni
}

// Predict simulates scheduling pod, as if evicted now and recreated with the same spec: the pod is
// removed from its node in the snapshot, the scheduler's PreFilter, Filter, PreScore and Score run
// over the snapshot (with the moves admitted earlier in the cycle), and the snapshot is restored.
// Outside a cycle the snapshot is brought up to date first.
func (s *Simulator) Predict(ctx context.Context, pod *corev1.Pod) (Prediction, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.inCycle {
		if err := s.refresh(ctx); err != nil {
			return Prediction{}, err
		}
	}
	return s.predict(ctx, pod)
}

func (s *Simulator) frameworkFor(pod *corev1.Pod) (string, framework.Framework) {
	name := pod.Spec.SchedulerName
	if name == "" {
		name = DefaultSchedulerName
	}
	if fw := s.frameworks[name]; fw != nil {
		return name, fw
	}
	if s.fallback != "" {
		return s.fallback, s.frameworks[s.fallback]
	}
	return name, nil
}

func (s *Simulator) predict(ctx context.Context, pod *corev1.Pod) (Prediction, error) {
	logger := klog.FromContext(ctx)
	profile, fw := s.frameworkFor(pod)
	pred := Prediction{Profile: profile, CurrentNode: pod.Spec.NodeName}
	if fw == nil {
		pred.Reason = fmt.Sprintf("no scheduler profile %q is simulated", profile)
		return pred, nil
	}
	candidate := replacementOf(pod)
	allNodes, err := s.snapshot.List()
	if err != nil {
		return pred, err
	}
	// The workload's shared PreFilter bases, computed (when missing) with the pod still on its node.
	var shared *workloadState
	if s.reuse != nil && s.inCycle && pod.DeletionTimestamp == nil {
		shared = s.reuse.bases(ctx, profile, candidate, allNodes)
	}
	// Take the pod off its node for the simulation; put the node back as it was afterwards.
	ni := s.nodeInfo(pod.Spec.NodeName)
	var removed fwk.PodInfo
	if ni != nil {
		saved := *ni
		*ni = *ni.SnapshotConcrete()
		removed = podInfoOf(ni, pod)
		if err := ni.RemovePod(logger, pod); err != nil {
			removed = nil
			logger.V(4).Info("Pod not in the scheduler snapshot of its node", "pod", klog.KObj(pod), "node", pod.Spec.NodeName, "err", err)
		}
		defer func() { *ni = saved }()
	}
	preCtx := ctx
	if shared != nil {
		preCtx = context.WithValue(ctx, preparedKey{}, s.reuse.prepare(ctx, profile, shared, removed, ni))
	}

	state := framework.NewCycleState()
	diagnosis := framework.Diagnosis{NodeToStatus: framework.NewDefaultNodeToStatus()}
	preRes, status, unschedulable := fw.RunPreFilterPlugins(preCtx, state, candidate)
	diagnosis.UnschedulablePlugins = unschedulable
	if !status.IsSuccess() {
		if !status.IsRejected() {
			return pred, fmt.Errorf("PreFilter: %w", status.AsError())
		}
		diagnosis.NodeToStatus.SetAbsentNodesStatus(status)
		diagnosis.PreFilterMsg = status.Message()
		diagnosis.AddPluginStatus(status)
		pred.Reason = (&framework.FitError{Pod: candidate, NumAllNodes: len(allNodes), Diagnosis: diagnosis}).Error()
		return pred, nil
	}
	nodes := allNodes
	if !preRes.AllNodes() {
		nodes = make([]fwk.NodeInfo, 0, len(preRes.NodeNames))
		for name := range preRes.NodeNames {
			if ni, err := s.snapshot.Get(name); err == nil {
				nodes = append(nodes, ni)
			}
		}
		diagnosis.NodeToStatus.SetAbsentNodesStatus(fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", sets.List(unschedulable))))
	}
	feasible, evaluated, err := s.filter(ctx, fw, state, candidate, pred.CurrentNode, nodes, len(allNodes), &diagnosis)
	if err != nil {
		return pred, err
	}
	pred.EvaluatedNodes = evaluated
	pred.FeasibleNodes = len(feasible)
	for _, ni := range feasible {
		if ni.Node().Name == pred.CurrentNode {
			pred.CurrentNodeFeasible = true
		}
	}
	if len(feasible) == 0 {
		pred.Reason = (&framework.FitError{Pod: candidate, NumAllNodes: len(allNodes), Diagnosis: diagnosis}).Error()
		return pred, nil
	}
	pred.Feasible = true
	scores, err := s.score(ctx, fw, state, candidate, feasible)
	if err != nil {
		return pred, err
	}
	best := scores[0]
	for _, sc := range scores[1:] {
		if sc.TotalScore > best.TotalScore || (sc.TotalScore == best.TotalScore && sc.Name < best.Name) {
			best = sc
		}
	}
	pred.Node, pred.Score = best.Name, best.TotalScore
	for _, sc := range scores {
		if sc.Name != pred.CurrentNode {
			continue
		}
		pred.CurrentNodeScore = sc.TotalScore
		if sc.TotalScore == best.TotalScore && best.Name != sc.Name {
			// The scheduler breaks ties at random: the pod may well land back where it is.
			pred.Node = sc.Name
			pred.Reason = fmt.Sprintf("the current node ties with %s for the best score", best.Name)
		}
	}
	return pred, nil
}

// replacementOf is the pod the owner would create in place of pod: same spec, not yet bound.
func replacementOf(pod *corev1.Pod) *corev1.Pod {
	p := pod.DeepCopy()
	p.Spec.NodeName = ""
	p.ResourceVersion = ""
	p.DeletionTimestamp = nil
	p.Status = corev1.PodStatus{Phase: corev1.PodPending}
	return p
}

// filter runs the Filter plugins over nodes (the snapshot's numAllNodes nodes, or those PreFilter
// kept) from where the previous prediction stopped, in parallel, until the scheduler's number of
// feasible nodes to find is reached, as the scheduler's findNodesThatPassFilters does, and advances
// the start index as findNodesThatFitPod does. kube-scheduler exports neither: this is a copy,
// pinned to kube-scheduler's own results by TestSamplingMatchesKubeScheduler. kube-scheduler filters
// with RunFilterPluginsWithNominatedPods, which needs its scheduling queue as the pod nominator; the
// simulation has no queue, so no nominated pods, and RunFilterPlugins is what that call does without
// them. The pod's current node is always evaluated, so a prediction never misses that it fits where
// it is.
func (s *Simulator) filter(ctx context.Context, fw framework.Framework, state fwk.CycleState, pod *corev1.Pod, currentNode string, nodes []fwk.NodeInfo, numAllNodes int, diagnosis *framework.Diagnosis) ([]fwk.NodeInfo, int, error) {
	numAll := len(nodes)
	if numAll == 0 {
		return nil, 0, nil
	}
	numToFind := s.numFeasibleNodesToFind(fw.PercentageOfNodesToScore(), int32(numAll))
	if !fw.HasScorePlugins() {
		numToFind = 1
	}
	if cap(s.feasibleBuf) < int(numToFind) {
		s.feasibleBuf = make([]fwk.NodeInfo, numToFind)
	}
	if cap(s.statusBuf) < numAll {
		s.statusBuf = make([]*fwk.Status, numAll)
	}
	feasible, statuses := s.feasibleBuf[:numToFind], s.statusBuf[:numAll]
	clear(feasible)
	clear(statuses)
	// Nothing is kept alive by the buffers past the prediction (the diagnosis keeps the statuses
	// it needs).
	defer clear(statuses)
	var feasibleLen atomic.Int32
	var firstErr atomic.Pointer[error]
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := s.nextStart % numAll
	check := func(i int) {
		ni := nodes[(start+i)%numAll]
		st := fw.RunFilterPlugins(ctx, state, pod, ni)
		if st.Code() == fwk.Error {
			err := st.AsError()
			firstErr.CompareAndSwap(nil, &err)
			cancel()
			return
		}
		if st.IsSuccess() {
			n := feasibleLen.Add(1)
			if n > numToFind {
				cancel()
				feasibleLen.Add(-1)
				return
			}
			feasible[n-1] = ni
			return
		}
		statuses[i] = st
	}
	if fw.HasFilterPlugins() {
		fw.Parallelizer().Until(ctx, numAll, check, "Filter")
	} else {
		for i := 0; i < int(numToFind); i++ {
			feasible[i] = nodes[(start+i)%numAll]
		}
		feasibleLen.Store(numToFind)
	}
	if p := firstErr.Load(); p != nil {
		return nil, 0, fmt.Errorf("Filter: %w", *p)
	}
	feasible = feasible[:feasibleLen.Load()]
	evaluated := len(feasible)
	currentSeen := false
	for _, ni := range feasible {
		currentSeen = currentSeen || ni.Node().Name == currentNode
	}
	for i, st := range statuses {
		if st == nil {
			continue
		}
		ni := nodes[(start+i)%numAll]
		evaluated++
		currentSeen = currentSeen || ni.Node().Name == currentNode
		diagnosis.NodeToStatus.Set(ni.Node().Name, st)
		diagnosis.AddPluginStatus(st)
	}
	s.nextStart = (s.nextStart + evaluated) % numAllNodes
	if !currentSeen && currentNode != "" {
		for _, ni := range nodes {
			if ni.Node().Name != currentNode {
				continue
			}
			evaluated++
			st := fw.RunFilterPlugins(ctx, state, pod, ni)
			switch {
			case st.Code() == fwk.Error:
				return nil, 0, fmt.Errorf("Filter: %w", st.AsError())
			case st.IsSuccess():
				feasible = append(feasible, ni)
			default:
				diagnosis.NodeToStatus.Set(currentNode, st)
				diagnosis.AddPluginStatus(st)
			}
			break
		}
	}
	return feasible, evaluated, nil
}

// numFeasibleNodesToFind is the scheduler's: all nodes up to 100, else percentageOfNodesToScore
// (adaptive when 0: 50% minus 1% per 125 nodes, at least 5%), at least 100.
func (s *Simulator) numFeasibleNodesToFind(profilePercentage *int32, numAll int32) int32 {
	if numAll < minFeasibleNodesToFind {
		return numAll
	}
	percentage := s.percentage
	if profilePercentage != nil {
		percentage = *profilePercentage
	}
	if percentage == 0 {
		percentage = int32(50) - numAll/125
		if percentage < minFeasibleNodesPercentageToFind {
			percentage = minFeasibleNodesPercentageToFind
		}
	}
	n := numAll * percentage / 100
	if n < minFeasibleNodesToFind {
		return minFeasibleNodesToFind
	}
	return n
}

// score runs PreScore and Score (with NormalizeScore and weights) over the feasible nodes.
func (s *Simulator) score(ctx context.Context, fw framework.Framework, state fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) ([]fwk.NodePluginScores, error) {
	if !fw.HasScorePlugins() {
		out := make([]fwk.NodePluginScores, len(nodes))
		for i, ni := range nodes {
			out[i] = fwk.NodePluginScores{Name: ni.Node().Name, TotalScore: 1}
		}
		return out, nil
	}
	if st := fw.RunPreScorePlugins(ctx, state, pod, nodes); !st.IsSuccess() {
		return nil, fmt.Errorf("PreScore: %w", st.AsError())
	}
	scores, st := fw.RunScorePlugins(ctx, state, pod, nodes)
	if !st.IsSuccess() {
		return nil, fmt.Errorf("Score: %w", st.AsError())
	}
	return scores, nil
}

// Admit records that pod is about to be evicted and its replacement placed on node: for the rest
// of the cycle the snapshot has the pod on node instead of its current node. It needs an open
// cycle (BeginCycle); EndCycle reverts it.
func (s *Simulator) Admit(ctx context.Context, pod *corev1.Pod, node string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.inCycle {
		return errors.New("simulator: Admit outside a cycle")
	}
	if s.admitted.Has(string(pod.UID)) {
		return fmt.Errorf("simulator: pod %s/%s was already admitted this cycle", pod.Namespace, pod.Name)
	}
	target := s.modify(node)
	if target == nil {
		return fmt.Errorf("simulator: node %q is not in the snapshot", node)
	}
	logger := klog.FromContext(ctx)
	var removed fwk.PodInfo
	origin := s.modify(pod.Spec.NodeName)
	if origin != nil {
		gen := origin.Generation
		removed = podInfoOf(origin, pod)
		if err := origin.RemovePod(logger, pod); err != nil {
			removed = nil
			logger.V(4).Info("Pod not in the scheduler snapshot of its node", "pod", klog.KObj(pod), "node", pod.Spec.NodeName, "err", err)
		}
		origin.Generation = gen
	}
	moved := replacementOf(pod)
	moved.Spec.NodeName = node
	pi, err := framework.NewPodInfo(moved)
	if err != nil {
		return err
	}
	if err := s.snapshot.AssumePod(pi); err != nil {
		return err
	}
	s.assumed = append(s.assumed, moved)
	s.admitted.Insert(string(pod.UID))
	if s.index != nil {
		// Both nodes' pods changed, their generations did not (the snapshot's must stay the
		// cache's for its next update).
		s.index.drop(pod.Spec.NodeName)
		s.index.drop(node)
	}
	if err := s.lister.assumed(moved, target); err != nil {
		return err
	}
	if s.reuse != nil {
		var from fwk.NodeInfo
		if origin != nil {
			from = origin
		}
		s.reuse.admit(ctx, removed, from, pi, target)
	}
	return nil
}

// podInfoOf is the snapshot's PodInfo of pod on ni (matched by UID, as NodeInfo.RemovePod matches),
// nil when ni does not hold it: the version the snapshot counts, which may be older than pod.
func podInfoOf(ni *framework.NodeInfo, pod *corev1.Pod) fwk.PodInfo {
	for _, p := range ni.Pods {
		if p.GetPod().UID == pod.UID {
			return p
		}
	}
	return nil
}

// setUpReuse keeps the wrappers each profile's framework was built with and, when InterPodAffinity
// is among them, drops the cycle's bases on Namespace events (the plugin reads namespaces' labels
// through its lister when it computes a base).
func (s *Simulator) setUpReuse(factory informers.SharedInformerFactory, wrapped map[fwk.Handle][]*sharedPreFilter) error {
	r := &reuseCache{wrappers: map[string][]*sharedPreFilter{}, workloads: map[workloadKey]*workloadState{}, once: map[uint64]struct{}{}, seed: maphash.MakeSeed()}
	namespaces := false
	for name, fw := range s.frameworks {
		// Only the wrappers the profile runs at PreFilter (a plugin enabled for Score alone is
		// wrapped too, but its PreFilter state would never be read).
		var atPreFilter []*sharedPreFilter
		for _, w := range wrapped[fw] {
			if slices.ContainsFunc(fw.ListPlugins().PreFilter.Enabled, func(p schedconfig.Plugin) bool { return p.Name == w.Name() }) {
				atPreFilter = append(atPreFilter, w)
				namespaces = namespaces || w.Name() == names.InterPodAffinity
			}
		}
		if len(atPreFilter) > 0 {
			r.wrappers[name] = atPreFilter
		}
	}
	if len(r.wrappers) == 0 {
		return nil
	}
	s.reuse = r
	if !namespaces {
		return nil
	}
	r.namespaces = factory.Core().V1().Namespaces().Lister()
	bump := func(any) { r.epoch.Add(1) }
	_, err := factory.Core().V1().Namespaces().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: bump, DeleteFunc: bump,
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Namespace)
			n, ok2 := newObj.(*corev1.Namespace)
			if !ok1 || !ok2 || !maps.Equal(o.Labels, n.Labels) {
				r.epoch.Add(1)
			}
		},
	})
	return err
}
