package reservation

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/utils/clock"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	accordclient "github.com/accord-sched/accord/pkg/generated/clientset/versioned"
	schedinformers "github.com/accord-sched/accord/pkg/generated/informers/externalversions/scheduling/v1alpha1"
	schedlisters "github.com/accord-sched/accord/pkg/generated/listers/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/internal/workqueueutil"
	"github.com/accord-sched/accord/pkg/scheduler/crcache"
	"github.com/accord-sched/accord/pkg/scheduler/frameworks"
)

// SyncTimeout bounds the Placer's wait for its informers before it places anything.
const SyncTimeout = time.Minute

// Reasons of a reservation's status.
const (
	ReasonPlaced        = "Placed"
	ReasonUnschedulable = "Unschedulable"
	ReasonNoProfile     = "NoProfile"
	ReasonUnsupported   = "Unsupported"
	ReasonConsumed      = "Consumed"
	ReasonTTLExpired    = "TTLExpired"
	// ReasonNodeNoLongerFits: an Available reservation's node stopped passing the profile's
	// Filter for the reservation's pod (its ClusterScopedResource or the node changed) before an
	// owner was placed there.
	ReasonNodeNoLongerFits = "NodeNoLongerFits"
)

// PlacerConfig is what a Placer is built from: accord-scheduler's profiles, plugin registry,
// clients and informer factory.
type PlacerConfig struct {
	// Profiles are the scheduler profiles that enable the Reservation plugin; a reservation whose
	// template names another schedulerName fails with reason NoProfile.
	Profiles []schedconfig.KubeSchedulerProfile
	// ComponentConfigVersion is the scheduler configuration's apiVersion.
	ComponentConfigVersion string
	// Registry is the scheduler's plugin registry (in-tree and out-of-tree).
	Registry   frameworkruntime.Registry
	Client     clientset.Interface
	KubeConfig *rest.Config
	// Accord, when set, is the client the Placer writes reservation statuses with; nil: one built
	// from KubeConfig (JSON, its own user agent). The simulation (test/simulation) sets it to its
	// fake clientset.
	Accord          accordclient.Interface
	InformerFactory informers.SharedInformerFactory
	// SchedulerCache, when set, is the scheduler's own cache (kube-scheduler's Scheduler.Cache):
	// placements run on its snapshot, which holds the pods the scheduler has assumed but not yet
	// bound. Nil: a snapshot of the informers' assigned pods.
	SchedulerCache internalcache.Cache
	// Reservations is the Reservation informer the scheduler's Reservation plugin reads
	// (crcache.Cache.ReservationInformer), started and synced by it: the Placer shares it.
	Reservations schedinformers.ReservationInformer
	// Ledger is the scheduler's Reservation ledger (LedgerOf the plugins' crcache.Cache): a placement
	// is recorded there, under its lock, before its status is written.
	Ledger *Ledger
	// CRs, when set, is the plugins' crcache.Cache: the Placer follows its ClusterScopedResource
	// informer (once a profile's plugin asked for it) and checks the reservations placed on a node
	// again when the node's ClusterScopedResource changes, as it does when the Node changes.
	CRs *crcache.Cache
	// Clock defaults to the real clock.
	Clock clock.Clock
	// IsLeader, when set, tells whether this replica leads (holds the scheduler's leader Lease): the
	// Placer places nothing until it does. Nil: the only replica (no leader election).
	IsLeader func(ctx context.Context) (bool, error)
}

// LeaderPoll is how often a Placer that does not lead checks whether it has become the leader.
const LeaderPoll = 2 * time.Second

// Placer places Pending reservations with the scheduler profile their template names, run over a
// snapshot of the cluster taken for each placement, and moves placed ones on to Bound or Expired.
// Placements are serialized (one worker). Build it (NewPlacer) before the scheduler's informer
// factory starts; Run it beside the scheduler.
type Placer struct {
	accord     accordclient.Interface
	lister     schedlisters.ReservationLister
	indexer    cache.Indexer
	ledger     *Ledger
	synced     []cache.InformerSynced
	pods       corelisters.PodLister
	nodes      corelisters.NodeLister
	frameworks map[string]framework.Framework
	snapshot   *snapshotHolder
	queue      workqueue.TypedRateLimitingInterface[cache.ObjectName]
	clock      clock.Clock
	isLeader   func(ctx context.Context) (bool, error)
	schedCache internalcache.Cache
	// recheck: the Available reservations whose node (or its ClusterScopedResource) changed since
	// their last sync; sync runs the profile's Filter for them on their node again.
	recheckMu sync.Mutex
	recheck   map[cache.ObjectName]bool
}

// snapshotHolder is the SharedLister the Placer's frameworks read: the snapshot of the placement
// under way.
type snapshotHolder struct {
	mu sync.Mutex
	s  *internalcache.Snapshot
}

func (h *snapshotHolder) set(s *internalcache.Snapshot) {
	h.mu.Lock()
	h.s = s
	h.mu.Unlock()
}

func (h *snapshotHolder) get() *internalcache.Snapshot {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.s
}

func (h *snapshotHolder) NodeInfos() fwk.NodeInfoLister       { return h.get().NodeInfos() }
func (h *snapshotHolder) StorageInfos() fwk.StorageInfoLister { return h.get().StorageInfos() }
func (h *snapshotHolder) PodGroupStates() fwk.PodGroupStateLister {
	return h.get().PodGroupStates()
}

// NewPlacer builds the Placer's frameworks (one per profile) and registers its informers.
func NewPlacer(ctx context.Context, cfg PlacerConfig) (*Placer, error) {
	registerMetrics()
	accord := cfg.Accord
	if accord == nil {
		if cfg.KubeConfig == nil {
			return nil, fmt.Errorf("the reservation placer needs a KubeConfig or an Accord client")
		}
		jsonCfg := rest.CopyConfig(cfg.KubeConfig)
		jsonCfg.ContentType, jsonCfg.AcceptContentTypes = "application/json", "application/json"
		jsonCfg.UserAgent = "accord-scheduler-reservation-placer"
		c, err := accordclient.NewForConfig(jsonCfg)
		if err != nil {
			return nil, fmt.Errorf("building the Accord client of the reservation placer: %w", err)
		}
		accord = c
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	rsv := cfg.Reservations
	if rsv == nil {
		return nil, fmt.Errorf("the reservation placer needs the Reservation informer of the scheduler's Reservation plugin")
	}
	if cfg.Ledger == nil {
		return nil, fmt.Errorf("the reservation placer needs the Reservation plugin's ledger")
	}
	if err := cfg.Ledger.Follow(rsv.Informer()); err != nil {
		return nil, fmt.Errorf("the reservation placer: %w", err)
	}
	p := &Placer{
		accord:     accord,
		lister:     rsv.Lister(),
		indexer:    rsv.Informer().GetIndexer(),
		ledger:     cfg.Ledger,
		pods:       cfg.InformerFactory.Core().V1().Pods().Lister(),
		nodes:      cfg.InformerFactory.Core().V1().Nodes().Lister(),
		snapshot:   &snapshotHolder{s: internalcache.NewEmptySnapshot()},
		clock:      cfg.Clock,
		isLeader:   cfg.IsLeader,
		schedCache: cfg.SchedulerCache,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "accord-reservation-placer"}),
	}
	var err error
	if p.frameworks, err = frameworks.Build(ctx, frameworks.Options{
		Profiles: cfg.Profiles, ComponentConfigVersion: cfg.ComponentConfigVersion, Registry: cfg.Registry,
		Client: cfg.Client, KubeConfig: cfg.KubeConfig, InformerFactory: cfg.InformerFactory,
		Snapshot: p.snapshot, LogKey: "reservationProfile",
	}); err != nil {
		return nil, fmt.Errorf("the reservation placer: %w", err)
	}
	podInf := cfg.InformerFactory.Core().V1().Pods().Informer()
	nodeInf := cfg.InformerFactory.Core().V1().Nodes().Informer()
	if _, err := rsv.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    p.enqueue,
		UpdateFunc: func(_, obj any) { p.enqueue(obj) },
	}); err != nil {
		return nil, err
	}
	// An assigned pod may consume an Available reservation in its namespace.
	if _, err := podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    p.podChanged,
		UpdateFunc: func(_, obj any) { p.podChanged(obj) },
	}); err != nil {
		return nil, err
	}
	// A placed reservation's node may stop fitting its pod before an owner is placed there: the
	// node's labels, taints, schedulability or allocatable change, or its ClusterScopedResource.
	if _, err := nodeInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, obj any) {
			o, ok1 := oldObj.(*corev1.Node)
			n, ok2 := obj.(*corev1.Node)
			if ok1 && ok2 && (!equality.Semantic.DeepEqual(o.Labels, n.Labels) || !equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints) ||
				o.Spec.Unschedulable != n.Spec.Unschedulable || !equality.Semantic.DeepEqual(o.Status.Allocatable, n.Status.Allocatable)) {
				p.nodeChanged(n.Name)
			}
		},
	}); err != nil {
		return nil, err
	}
	if cfg.CRs != nil {
		if inf := cfg.CRs.ClusterScopedResourceInformer(); inf != nil {
			index, err := cfg.CRs.Nodes(nil)
			if err != nil {
				return nil, err
			}
			crChanged := func(obj any) {
				if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = tomb.Obj
				}
				cr, ok := obj.(*schedv1alpha1.ClusterScopedResource)
				if !ok {
					return
				}
				// The profile's plugins filter with the Cache's NodeIndex, which another handler of
				// this informer updates: the check waits (at most crcache.CatchUpTimeout) until the
				// index holds what the informer holds now for this node, woken by the index's
				// changes (indexHolds, awaitIndex).
				awaitIndex(index, crcache.CatchUpTimeout, indexHolds(inf.GetStore(), cr.Name), cr.Name)
				p.nodeChanged(cr.Name)
			}
			if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc:    crChanged,
				UpdateFunc: func(_, obj any) { crChanged(obj) },
				DeleteFunc: func(obj any) {
					if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
						obj = tomb.Obj
					}
					if cr, ok := obj.(metav1.Object); ok {
						p.nodeChanged(cr.GetName())
					}
				},
			}); err != nil {
				return nil, err
			}
			p.synced = append(p.synced, inf.HasSynced)
		}
	}
	p.synced = append(p.synced, rsv.Informer().HasSynced, podInf.HasSynced, nodeInf.HasSynced)
	return p, nil
}

// indexHolds reports, for the NodeIndex's data of the node named name, whether it holds the
// ClusterScopedResource the informer's store holds now (the same object; none when the store has
// none). An event handler waits for this rather than for the index to hold the object it was given:
// when the CR changed again meanwhile, the store and the index move on to the newer object and the
// older one is never seen there, so such a wait lasted its whole timeout, and each further event
// of the informer waited behind it (a reservation on a node whose CR had just stopped fitting
// stayed Available that long, and an eviction could go into it).
func indexHolds(store cache.Store, name string) func(*crcache.NodeData) bool {
	return func(d *crcache.NodeData) bool {
		cur, exists, err := store.GetByKey(name)
		if err != nil || !exists {
			return d == nil || d.CR == nil
		}
		cr, _ := cur.(*schedv1alpha1.ClusterScopedResource)
		return d != nil && d.CR != nil && d.CR == cr
	}
}

// awaitIndex waits, at most timeout, until ok holds for the index's data of the node named name,
// waking at each change of the index, and reports whether it did.
func awaitIndex(index *crcache.NodeIndex, timeout time.Duration, ok func(*crcache.NodeData) bool, name string) bool {
	return index.Await(timeout, func() bool { return ok(index.Get(name)) })
}

// nodeChanged queues the reservations Available on node (in the informer, or placed in the ledger
// and not yet published) for a check that they still fit there.
func (p *Placer) nodeChanged(node string) {

	rs, err := byIndex(p.indexer, crcache.IndexReservationNode, node)
	if err != nil {
		return
	}
	for _, r := range p.ledger.placements() {
		if r.Status.NodeName == node {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return
	}
	p.recheckMu.Lock()
	if p.recheck == nil {
		p.recheck = map[cache.ObjectName]bool{}
	}
	for _, r := range rs {
		p.recheck[cache.MetaObjectToName(r)] = true
	}
	p.recheckMu.Unlock()
	for _, r := range rs {
		p.queue.Add(cache.MetaObjectToName(r))
	}
}

// takeRecheck reports whether key was queued by nodeChanged since its last sync, and forgets it.
func (p *Placer) takeRecheck(key cache.ObjectName) bool {
	p.recheckMu.Lock()
	defer p.recheckMu.Unlock()
	if !p.recheck[key] {
		return false
	}
	delete(p.recheck, key)
	return true
}

func (p *Placer) enqueue(obj any) {
	if r, ok := obj.(*schedv1alpha1.Reservation); ok {
		p.queue.Add(cache.MetaObjectToName(r))
	}
}

func (p *Placer) podChanged(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" || pod.DeletionTimestamp != nil {
		return
	}
	for _, key := range ownerKeys(pod) {
		rs, err := byIndex(p.indexer, crcache.IndexReservationOwner, key)
		if err != nil {
			return
		}
		for _, r := range rs {
			r = p.ledger.effective(r)
			if r.Status.Phase != schedv1alpha1.ReservationAvailable || r.Status.NodeName != pod.Spec.NodeName {
				continue
			}
			// The pod the scheduler's Reserve recorded as r's consumer (it may have been created in
			// r's second, which Rank does not accept of a placed pod), or one that may consume r.
			if c, ok := p.ledger.consumedBy(r.UID); (ok && c.uid == pod.UID) || (!ok && Matches(r, pod)) {
				p.queue.Add(cache.MetaObjectToName(r))
			}
		}
	}
}

// Run waits (at most SyncTimeout) for the Reservation informer it shares with the Reservation plugin
// and for the scheduler's, then, once this replica leads, places reservations until ctx is done.
func (p *Placer) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("reservation-placer")
	ctx = klog.NewContext(ctx, logger)
	defer p.queue.ShutDown()
	if ok, err := syncThenLead(ctx, p.synced, p.isLeader, "placed", "placing reservations"); !ok {
		return err
	}
	// Nodes may have changed while no replica led: the reservations placed before are checked
	// again.
	if all, err := p.lister.List(labels.Everything()); err == nil {
		nodes := map[string]bool{}
		for _, r := range all {
			if r.Status.Phase == schedv1alpha1.ReservationAvailable && r.Status.NodeName != "" && !nodes[r.Status.NodeName] {
				nodes[r.Status.NodeName] = true
				p.nodeChanged(r.Status.NodeName)
			}
		}
	}
	go func() {
		<-ctx.Done()
		p.queue.ShutDown()
	}()
	for p.processNext(ctx) {
	}
	return nil
}

// waitLeader returns once this replica leads (at once without leader election), false when ctx
// ends first. kube-scheduler exits when it loses the lease, so leading is checked only once.
func (p *Placer) waitLeader(ctx context.Context) bool {
	return waitForLease(ctx, p.isLeader, "placed", "placing reservations")
}

// syncThenLead waits (at most SyncTimeout, saying so) for the informers of synced, then for the
// scheduler's lease (waitForLease): the start of the placer's and the collector's Run. ok is false
// when ctx ended first (err nil) or the informers did not sync in time (err says so).
func syncThenLead(ctx context.Context, synced []cache.InformerSynced, isLeader func(context.Context) (bool, error), done, doing string) (ok bool, err error) {
	klog.FromContext(ctx).Info("Waiting for the informers before "+doing, "timeout", SyncTimeout)
	syncCtx, cancel := context.WithTimeout(ctx, SyncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), synced...) {
		if ctx.Err() != nil {
			return false, nil
		}
		return false, fmt.Errorf("%s: informers did not sync within %s (may the scheduler list and watch reservations?)", doing, SyncTimeout)
	}
	return waitForLease(ctx, isLeader, done, doing), nil
}

// waitForLease polls isLeader every LeaderPoll until this replica leads (true at once when isLeader
// is nil: no leader election) or ctx ends (false). It says once what it waits for, and once that it
// leads after having waited; done and doing name the work in those lines. The placer and the
// collector both run on the scheduler's leader only.
func waitForLease(ctx context.Context, isLeader func(context.Context) (bool, error), done, doing string) bool {
	if isLeader == nil {
		return true
	}
	logger := klog.FromContext(ctx)
	logged := false
	for {
		leads, err := isLeader(ctx)
		if leads {
			if logged {
				logger.Info("Leading the scheduler: " + doing)
			}
			return true
		}
		if !logged {
			logger.Info("Not the scheduler's leader: reservations are "+done+" by the leader only; waiting for the lease", "poll", LeaderPoll)
			logged = true
		}
		if err != nil {
			logger.V(2).Info("Reading the leader lease failed; retrying", "err", err)
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(LeaderPoll):
		}
	}
}

func (p *Placer) processNext(ctx context.Context) bool {
	return workqueueutil.ProcessNext(ctx, p.queue, p.sync, func(key cache.ObjectName, err error) {
		klog.FromContext(ctx).Info("Retrying reservation", "reservation", key, "err", err)
	})
}

// sync moves one reservation on, and returns when to look at it again (its expiry).
func (p *Placer) sync(ctx context.Context, key cache.ObjectName) (time.Duration, error) {
	r, err := p.lister.Reservations(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	// A placement whose status the informer does not show yet is Available.
	r = p.ledger.effective(r)
	now := p.clock.Now()
	expire := ExpireTime(r)
	switch r.Status.Phase {
	case "", schedv1alpha1.ReservationPending:
		if !now.Before(expire) {
			return 0, p.setStatus(ctx, r, schedv1alpha1.ReservationExpired, ReasonTTLExpired, "expired before it could be placed", "", nil)
		}
		return time.Until(expire), p.place(ctx, r)
	case schedv1alpha1.ReservationAvailable:
		if pod := p.consumer(r); pod != nil {
			return 0, p.setStatus(ctx, r, schedv1alpha1.ReservationBound, ReasonConsumed,
				fmt.Sprintf("pod %s was placed on %s", pod.Name, r.Status.NodeName), r.Status.NodeName,
				&schedv1alpha1.ReservationBoundPod{Name: pod.Name, UID: pod.UID})
		}
		if !now.Before(expire) {
			return 0, p.setStatus(ctx, r, schedv1alpha1.ReservationExpired, ReasonTTLExpired,
				fmt.Sprintf("no owner pod was placed on %s within the TTL (%s)", r.Status.NodeName, TTL(r)), r.Status.NodeName, nil)
		}
		if p.takeRecheck(key) {
			msg, fits, err := p.stillFits(ctx, r)

			if err != nil {
				p.nodeChanged(r.Status.NodeName)
				return 0, err
			}
			if !fits {
				// An eviction waiting for r (reservation-first polls it) must not go: the
				// replacement would find no place on r's node. Failed tells it so, and frees the
				// room.
				klog.FromContext(ctx).Info("Placed reservation no longer fits its node", "reservation", klog.KObj(r), "node", r.Status.NodeName, "reason", msg)
				return 0, p.setStatus(ctx, r, schedv1alpha1.ReservationFailed, ReasonNodeNoLongerFits, msg, r.Status.NodeName, nil)
			}
		}
		return expire.Sub(now), nil
	}
	return 0, nil
}

// consumer is the running pod on r's node that consumed r: the one the Reservation plugin recorded
// in its Reserve, once it is bound there. A pod placed without this scheduler's cycle (another
// scheduler, a spec.nodeName, a cycle before a restart) may be the consumer too: an owner pod on
// the node, r's own first, a sibling only once the pod r was made for is evicted, that consumed no
// other reservation (the ledger's, or one whose status.boundPod names it).
func (p *Placer) consumer(r *schedv1alpha1.Reservation) *corev1.Pod {
	if c, ok := p.ledger.consumedBy(r.UID); ok {
		pod, err := p.pods.Pods(r.Namespace).Get(c.name)
		if err == nil && pod.UID == c.uid && pod.Spec.NodeName == r.Status.NodeName && pod.DeletionTimestamp == nil {
			return pod
		}
		return nil
	}
	pods, err := p.pods.Pods(r.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var best *corev1.Pod
	bestRank := NoMatch
	for _, pod := range pods {
		if pod.Spec.NodeName != r.Status.NodeName || pod.DeletionTimestamp != nil {
			continue
		}
		rank := Rank(r, pod)
		// A sibling takes r only once the pod r was made for is evicted, as in the Plugin's Reserve:
		// a sibling running on r's node (placed since r was made, or in the same second) is not r's
		// consumer while that pod still runs and waits for r to evict it.
		if rank == NoMatch || (rank == RankSibling && predecessorRuns(p.pods, r)) || (best != nil && rank >= bestRank) || p.ledger.consumes(pod.UID) || p.boundElsewhere(r, pod) {
			continue
		}
		best, bestRank = pod, rank
	}
	return best
}

// stillFits runs the profile's PreFilter and Filter for r's pod on r's node over a fresh snapshot,
// as place did, but for the room held by reservations there (r's own among them: the Reservation
// plugin cannot tell r's room from another's, and the others were placed beside r): a change of the
// node or of its ClusterScopedResource is what it looks for. msg says why it no longer fits.
func (p *Placer) stillFits(ctx context.Context, r *schedv1alpha1.Reservation) (msg string, fits bool, err error) {
	pod := PodOf(r)
	fw := p.frameworks[pod.Spec.SchedulerName]
	if fw == nil {
		return "", true, nil
	}
	p.ledger.place.Lock()
	snap, err := p.takeSnapshot(ctx)
	p.ledger.place.Unlock()
	if err != nil {
		return "", false, err
	}
	p.snapshot.set(snap)
	node := r.Status.NodeName
	ni, err := snap.NodeInfos().Get(node)
	if err != nil || ni.Node() == nil {
		// The node is gone: the collector fails r (NodeDeleted).
		return "", true, nil
	}
	state := framework.NewCycleState()
	preRes, st, _ := fw.RunPreFilterPlugins(ctx, state, pod)
	if !st.IsSuccess() {
		if !st.IsRejected() {
			return "", false, fmt.Errorf("PreFilter: %w", st.AsError())
		}
		return fmt.Sprintf("node %s no longer fits: %s", node, st.Message()), false, nil
	}
	if !preRes.AllNodes() && !preRes.NodeNames.Has(node) {
		return fmt.Sprintf("node %s no longer fits: PreFilter leaves only %v", node, sets.List(preRes.NodeNames)), false, nil
	}
	if s, err := readState(state); err == nil {
		state.Write(stateKey, &preFilterState{own: s.own, gen: s.gen, want: s.want})
	}
	st = fw.RunFilterPlugins(ctx, state, pod, ni)
	switch {
	case st.IsSuccess():
		return "", true, nil
	case st.Code() == fwk.Error:
		return "", false, fmt.Errorf("Filter: %w", st.AsError())
	}
	return fmt.Sprintf("node %s no longer fits: %s: %s", node, st.Plugin(), st.Message()), false, nil
}

// boundElsewhere reports whether a reservation other than r names pod as its bound pod.
func (p *Placer) boundElsewhere(r *schedv1alpha1.Reservation, pod *corev1.Pod) bool {
	for _, key := range ownerKeys(pod) {
		rs, err := byIndex(p.indexer, crcache.IndexReservationOwner, key)
		if err != nil {
			return true
		}
		for _, o := range rs {
			if o.UID != r.UID && o.Status.BoundPod != nil && o.Status.BoundPod.UID == pod.UID {
				return true
			}
		}
	}
	return false
}

// place runs the profile's PreFilter, Filter, PreScore and Score for the reservation's pod over a
// fresh snapshot and makes the reservation Available on the best node, or Failed.
func (p *Placer) place(ctx context.Context, r *schedv1alpha1.Reservation) error {
	logger := klog.FromContext(ctx)
	pod := PodOf(r)
	fw := p.frameworks[pod.Spec.SchedulerName]
	if fw == nil {
		return p.setStatus(ctx, r, schedv1alpha1.ReservationFailed, ReasonNoProfile,
			fmt.Sprintf("no scheduler profile %q with the %s plugin enabled", pod.Spec.SchedulerName, Name), "", nil)
	}
	if len(pod.Spec.ResourceClaims) > 0 {
		return p.setStatus(ctx, r, schedv1alpha1.ReservationFailed, ReasonUnsupported,
			"templates with resourceClaims are not supported", "", nil)
	}
	// Decided and recorded in the ledger under its lock: no pod's Reserve runs in between (Ledger).
	p.ledger.place.Lock()
	snap, err := p.takeSnapshot(ctx)
	if err != nil {
		p.ledger.place.Unlock()
		return err
	}
	p.snapshot.set(snap)
	node, msg, err := placeWith(ctx, fw, snap, pod)
	if err != nil {
		p.ledger.place.Unlock()
		return err
	}
	if node == "" {
		p.ledger.place.Unlock()
		logger.Info("Reservation cannot be placed", "reservation", klog.KObj(r), "reason", msg)
		return p.setStatus(ctx, r, schedv1alpha1.ReservationFailed, ReasonUnschedulable, msg, "", nil)
	}
	placed := withStatus(r, schedv1alpha1.ReservationAvailable, ReasonPlaced, msg, node, nil)
	p.ledger.assume(placed)
	p.ledger.place.Unlock()
	logger.Info("Reservation placed", "reservation", klog.KObj(r), "node", node)
	if err := p.writeStatus(ctx, placed); err != nil {
		// Not published: its room is free again, and it is placed anew on the retry.
		p.ledger.forget(placed)
		return err
	}
	return nil
}

// takeSnapshot is the cluster a placement runs on: the scheduler cache's snapshot (assumed pods
// included) when the Placer has it, else the informers' nodes and assigned pods.
func (p *Placer) takeSnapshot(ctx context.Context) (*internalcache.Snapshot, error) {
	if p.schedCache != nil {
		snap := internalcache.NewEmptySnapshot()
		if err := p.schedCache.UpdateSnapshot(klog.FromContext(ctx), snap); err != nil {
			return nil, err
		}
		return snap, nil
	}
	nodes, err := p.nodes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	all, err := p.pods.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	pods := make([]*corev1.Pod, 0, len(all))
	for _, pod := range all {
		if pod.Spec.NodeName != "" && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
			pods = append(pods, pod)
		}
	}
	return internalcache.NewSnapshot(pods, nodes), nil
}

// placeWith returns the node fw would pick for pod in snap, or "" and the scheduler's "0/N nodes
// are available" message.
func placeWith(ctx context.Context, fw framework.Framework, snap *internalcache.Snapshot, pod *corev1.Pod) (string, string, error) {
	listed, err := snap.NodeInfos().List()
	if err != nil {
		return "", "", err
	}
	// A snapshot built from pods has entries for the nodes of pods whose Node is gone.
	all := make([]fwk.NodeInfo, 0, len(listed))
	for _, ni := range listed {
		if ni.Node() != nil {
			all = append(all, ni)
		}
	}
	state := framework.NewCycleState()
	diagnosis := framework.Diagnosis{NodeToStatus: framework.NewDefaultNodeToStatus()}
	fitErr := func() string {
		return (&framework.FitError{Pod: pod, NumAllNodes: len(all), Diagnosis: diagnosis}).Error()
	}
	preRes, st, unschedulable := fw.RunPreFilterPlugins(ctx, state, pod)
	diagnosis.UnschedulablePlugins = unschedulable
	if !st.IsSuccess() {
		if !st.IsRejected() {
			return "", "", fmt.Errorf("PreFilter: %w", st.AsError())
		}
		diagnosis.NodeToStatus.SetAbsentNodesStatus(st)
		diagnosis.PreFilterMsg = st.Message()
		diagnosis.AddPluginStatus(st)
		return "", fitErr(), nil
	}
	nodes := all
	if !preRes.AllNodes() {
		nodes = nil
		for _, ni := range all {
			if preRes.NodeNames.Has(ni.Node().Name) {
				nodes = append(nodes, ni)
			}
		}
		diagnosis.NodeToStatus.SetAbsentNodesStatus(fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
			fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", sets.List(unschedulable))))
	}
	var feasible []fwk.NodeInfo
	for _, ni := range nodes {
		st := fw.RunFilterPlugins(ctx, state, pod, ni)
		switch {
		case st.IsSuccess():
			feasible = append(feasible, ni)
		case st.Code() == fwk.Error:
			return "", "", fmt.Errorf("Filter: %w", st.AsError())
		default:
			diagnosis.NodeToStatus.Set(ni.Node().Name, st)
			diagnosis.AddPluginStatus(st)
		}
	}
	if len(feasible) == 0 {
		return "", fitErr(), nil
	}
	best, bestScore := feasible[0].Node().Name, int64(0)
	if fw.HasScorePlugins() {
		if st := fw.RunPreScorePlugins(ctx, state, pod, feasible); !st.IsSuccess() {
			return "", "", fmt.Errorf("PreScore: %w", st.AsError())
		}
		scores, st := fw.RunScorePlugins(ctx, state, pod, feasible)
		if !st.IsSuccess() {
			return "", "", fmt.Errorf("Score: %w", st.AsError())
		}
		best, bestScore = scores[0].Name, scores[0].TotalScore
		for _, s := range scores[1:] {
			if s.TotalScore > bestScore || (s.TotalScore == bestScore && s.Name < best) {
				best, bestScore = s.Name, s.TotalScore
			}
		}
	}
	return best, fmt.Sprintf("placed on %s (score %d, %d of %d nodes feasible)", best, bestScore, len(feasible), len(all)), nil
}

func (p *Placer) setStatus(ctx context.Context, r *schedv1alpha1.Reservation, phase schedv1alpha1.ReservationPhase, reason, msg, node string, bound *schedv1alpha1.ReservationBoundPod) error {
	return p.writeStatus(ctx, withStatus(r, phase, reason, msg, node, bound))
}

// withStatus is a copy of r with that status (expireTime: ExpireTime).
func withStatus(r *schedv1alpha1.Reservation, phase schedv1alpha1.ReservationPhase, reason, msg, node string, bound *schedv1alpha1.ReservationBoundPod) *schedv1alpha1.Reservation {
	r = r.DeepCopy()
	exp := metav1.NewTime(ExpireTime(r))
	r.Status = schedv1alpha1.ReservationStatus{Phase: phase, Reason: reason, Message: msg, NodeName: node, ExpireTime: &exp, BoundPod: bound}
	return r
}

// writeStatus writes r's status; a reservation deleted meanwhile is not an error.
func (p *Placer) writeStatus(ctx context.Context, r *schedv1alpha1.Reservation) error {
	_, err := p.accord.SchedulingV1alpha1().Reservations(r.Namespace).UpdateStatus(ctx, r, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("updating the status of reservation %s/%s to %s: %w", r.Namespace, r.Name, r.Status.Phase, err)
	}
	transitions.WithLabelValues(string(r.Status.Phase), r.Status.Reason).Inc()
	klog.FromContext(ctx).V(2).Info("Reservation status", "reservation", klog.KObj(r), "phase", r.Status.Phase, "reason", r.Status.Reason, "node", r.Status.NodeName)
	return nil
}
