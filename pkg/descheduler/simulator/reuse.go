package simulator

import (
	"context"
	"encoding/json"
	"hash/maphash"
	"reflect"
	"slices"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/interpodaffinity"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// PreFilter reuse.
//
// InterPodAffinity's and PodTopologySpread's PreFilter walk the whole snapshot (every pod, or every
// pod with required anti-affinity) to count, per topology domain, the pods that match the incoming
// pod's terms and spread constraints. Their PreFilter state is a function of the snapshot and of a
// few fields of the pod's spec (namespace, labels, affinity, topology spread constraints, node
// selector, tolerations; see workloadSpecKey), plus the labels of the namespaces InterPodAffinity
// reads through its namespace lister. The candidates of one workload share those fields, and within
// a cycle the snapshot changes only by the moves Admit records. So, within a cycle, the simulator
// computes these two plugins' PreFilter state once per workload over the snapshot as it is (a
// "base", from the workload's second candidate of the cycle on: see bases), and for each candidate
// hands the framework a clone of the base from which the candidate itself was removed with the plugin's own PreFilterExtensions.RemovePod, as kube-scheduler's
// preemption evaluates a node without its victims. Every other PreFilter plugin still runs per
// candidate. Admit keeps the bases current or drops them (see reuseCache.admit); BeginCycle and
// EndCycle drop them all, and so does a Namespace event.
//
// The framework runs the two plugins through a wrapper (sharedPreFilter) that, when the prediction's
// context carries a prepared state for it, writes that state into the CycleState and returns the
// base's status instead of computing; everything else is forwarded to the plugin.

// reuseMaxWorkloads bounds the bases kept in one cycle (a PodTopologySpread base over hostnames holds
// a count per node: at 5000 nodes about 200 KiB). Beyond it, a new workload's candidates are
// simulated without reuse (a capped cycle has tens of candidates).
const reuseMaxWorkloads = 256

// extensionMethods are the exported methods a wrapped plugin may have besides sharedPreFilter's
// own: those its PreFilterExtensions and ScoreExtensions (the plugin itself) provide.
var extensionMethods = map[string]bool{"AddPod": true, "RemovePod": true, "NormalizeScore": true}

// sharedPreFilter wraps InterPodAffinity or PodTopologySpread in the simulator's frameworks. Its
// method set is the plugins' (checked by wrapReusable), so the framework places it at the same
// extension points.
type sharedPreFilter struct {
	pre      fwk.PreFilterPlugin
	ext      fwk.PreFilterExtensions
	filter   fwk.FilterPlugin
	preScore fwk.PreScorePlugin
	score    fwk.ScorePlugin
	enqueue  fwk.EnqueueExtensions
	sign     fwk.SignPlugin
	// key is where the plugin keeps its PreFilter state in the CycleState ("PreFilter" + its name,
	// as both plugins do; a base whose state is not found there is not reused).
	key fwk.StateKey
	// idx narrows the nodes the plugin reads (see labelIndex); nil: not narrowed.
	idx *labelIndex
}

func (w *sharedPreFilter) Name() string { return w.pre.Name() }

func (w *sharedPreFilter) PreFilter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if p, ok := ctx.Value(preparedKey{}).(prepared); ok {
		if st, ok := p[w.Name()]; ok {
			if st.skip {
				return nil, fwk.NewStatus(fwk.Skip)
			}
			state.Write(w.key, st.data)
			return st.result, nil
		}
	}
	return w.preFilter(ctx, state, pod, nodes)
}

func (w *sharedPreFilter) PreFilterExtensions() fwk.PreFilterExtensions { return w.ext }

func (w *sharedPreFilter) Filter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, ni fwk.NodeInfo) *fwk.Status {
	return w.filter.Filter(ctx, state, pod, ni)
}

func (w *sharedPreFilter) PreScore(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	return w.narrowedPreScore(ctx, state, pod, nodes)
}

func (w *sharedPreFilter) Score(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	if w.idx != nil && w.Name() == names.PodTopologySpread {
		// Read-only: PreScore made the views (Score runs on several goroutines).
		if v, ok := w.idx.byNI[ni]; ok {
			ni = v
		}
	}
	return w.score.Score(ctx, state, pod, ni)
}

func (w *sharedPreFilter) ScoreExtensions() fwk.ScoreExtensions { return w.score.ScoreExtensions() }

func (w *sharedPreFilter) EventsToRegister(ctx context.Context) ([]fwk.ClusterEventWithHint, error) {
	return w.enqueue.EventsToRegister(ctx)
}

func (w *sharedPreFilter) SignPod(ctx context.Context, pod *corev1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return w.sign.SignPod(ctx, pod)
}

// reusable tells whether a plugin's PreFilter state may be shared, given its args: PodTopologySpread
// with hard (DoNotSchedule) default constraints builds them from selectors it reads through
// Service, ReplicationController, ReplicaSet and StatefulSet listers, which the reuse does not
// follow, so that configuration is not wrapped. (The system defaults are ScheduleAnyway: PreFilter
// does not use them.)
func reusable(name string, args runtime.Object) bool {
	switch name {
	case names.InterPodAffinity:
		return true
	case names.PodTopologySpread:
		a, ok := args.(*schedconfig.PodTopologySpreadArgs)
		if !ok || a.DefaultingType != schedconfig.ListDefaulting {
			return ok || args == nil
		}
		for _, c := range a.DefaultConstraints {
			if c.WhenUnsatisfiable == corev1.DoNotSchedule {
				return false
			}
		}
		return true
	}
	return false
}

// wrapReusable replaces, in reg, the factories of InterPodAffinity and PodTopologySpread with ones
// that wrap the plugin in a sharedPreFilter and record the wrapper under the framework handle it was
// built for (record). A plugin whose method set is not exactly the wrapper's (a newer
// kube-scheduler adding an extension point to it) is left unwrapped: its PreFilter then runs for
// every candidate.
func wrapReusable(reg frameworkruntime.Registry, logger klog.Logger, record func(fwk.Handle, *sharedPreFilter)) {
	wrapperMethods := map[string]bool{}
	wt := reflect.TypeOf(&sharedPreFilter{})
	for i := range wt.NumMethod() {
		wrapperMethods[wt.Method(i).Name] = true
	}
	for _, name := range []string{names.InterPodAffinity, names.PodTopologySpread} {
		factory, ok := reg[name]
		if !ok {
			continue
		}
		reg[name] = func(ctx context.Context, args runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
			p, err := factory(ctx, args, h)
			if err != nil || !reusable(name, args) {
				return p, err
			}
			pt := reflect.TypeOf(p)
			for i := range pt.NumMethod() {
				if m := pt.Method(i).Name; !wrapperMethods[m] && !extensionMethods[m] {
					logger.Info("Scheduler plugin not wrapped for PreFilter reuse: it has a method the wrapper does not forward", "plugin", name, "method", m)
					return p, nil
				}
			}
			w := &sharedPreFilter{key: fwk.StateKey("PreFilter" + name)}
			var okAll [6]bool
			w.pre, okAll[0] = p.(fwk.PreFilterPlugin)
			w.filter, okAll[1] = p.(fwk.FilterPlugin)
			w.preScore, okAll[2] = p.(fwk.PreScorePlugin)
			w.score, okAll[3] = p.(fwk.ScorePlugin)
			w.enqueue, okAll[4] = p.(fwk.EnqueueExtensions)
			w.sign, okAll[5] = p.(fwk.SignPlugin)
			for _, ok := range okAll {
				if !ok {
					logger.Info("Scheduler plugin not wrapped for PreFilter reuse: it lacks an extension point the wrapper forwards", "plugin", name)
					return p, nil
				}
			}
			if w.ext = w.pre.PreFilterExtensions(); w.ext == nil {
				return p, nil
			}
			record(h, w)
			return w, nil
		}
	}
}

// preparedKey keys, in the context of one prediction's RunPreFilterPlugins, the prepared states.
type preparedKey struct{}

// prepared maps a wrapped plugin's name to the state its PreFilter hands the framework.
type prepared map[string]pluginState

// pluginState is a plugin's PreFilter outcome for a workload: Skip, or success with its state and
// result. Other outcomes are not kept (the plugin then runs as usual).
type pluginState struct {
	skip   bool
	data   fwk.StateData
	result *fwk.PreFilterResult
}

// workloadState holds the bases of one workload (profile and workloadSpecKey) in one cycle.
type workloadState struct {
	profile string
	// pod is the replacement pod the bases were computed for; the extensions get it as the pod to
	// schedule.
	pod *corev1.Pod
	// epoch is reuseCache.epoch when the bases were computed.
	epoch int64
	// bases by plugin name; a plugin absent from it is computed at the workload's next prediction.
	bases map[string]pluginState
}

type workloadKey struct{ profile, spec string }

// reuseCache is the simulator's PreFilter reuse: the wrappers of each profile and the cycle's
// bases. Its maps are guarded by Simulator.mu.
type reuseCache struct {
	wrappers  map[string][]*sharedPreFilter
	workloads map[workloadKey]*workloadState
	// once holds a hash of the workloads (profile and workloadSpecKey) predicted once this cycle
	// without a base: a workload's base is computed at its second candidate of the cycle (see bases).
	once map[uint64]struct{}
	seed maphash.Seed
	// epoch is bumped by a Namespace event (InterPodAffinity reads namespaces' labels through its
	// lister): bases of an older epoch are recomputed.
	epoch atomic.Int64
	// namespaces is InterPodAffinity's view of namespaces' labels (nil without it).
	namespaces listersv1.NamespaceLister
	// computed and reused count plugin bases computed and prepared states handed to the framework
	// (for tests and benchmarks).
	computed, reused int64
}

// clear drops every base (a new cycle, or the end of one).
func (r *reuseCache) clear() {
	if r != nil {
		clear(r.workloads)
		clear(r.once)
	}
}

// workloadSpecKey is what, besides the snapshot and the namespaces' labels, the two plugins'
// PreFilter read of the pod: InterPodAffinity its namespace, labels and affinity terms;
// PodTopologySpread its namespace, labels (selectors, matchLabelKeys), spread constraints, and the
// node affinity, node selector and tolerations its node inclusion policies apply.
func workloadSpecKey(pod *corev1.Pod) (string, error) {
	b, err := json.Marshal(struct {
		Namespace    string                            `json:"ns"`
		Labels       map[string]string                 `json:"l,omitempty"`
		Affinity     *corev1.Affinity                  `json:"a,omitempty"`
		Spread       []corev1.TopologySpreadConstraint `json:"s,omitempty"`
		NodeSelector map[string]string                 `json:"n,omitempty"`
		Tolerations  []corev1.Toleration               `json:"t,omitempty"`
	}{pod.Namespace, pod.Labels, pod.Spec.Affinity, pod.Spec.TopologySpreadConstraints, pod.Spec.NodeSelector, pod.Spec.Tolerations})
	return string(b), err
}

// bases returns the workload's bases for the profile, computing the missing ones over the snapshot
// as it is (the candidate still on its node). nil: no reuse for this candidate. The caller leaves a
// terminating candidate out: PodTopologySpread does not count a terminating pod, so removing one
// from a base would count it out twice.
//
// A workload's first candidate of the cycle gets no base (nil): a base serves the candidates after
// it, and for the first one it costs more than the plugins' own PreFilter (the base, its clone, the
// RemovePod, and the update of the base at every later move). The candidates of one node, the batch
// a ClusterScopedResource change or a node's limit decides, are mostly of distinct workloads (a
// workload's replicas spread over nodes), and their bases would never be read. The base is computed
// at the second candidate, over the snapshot as it is then, as a dropped base is. Neither is a base
// computed when the cycle keeps reuseMaxWorkloads already: it would serve one candidate.
func (r *reuseCache) bases(ctx context.Context, profile string, candidate *corev1.Pod, allNodes []fwk.NodeInfo) *workloadState {
	wrappers := r.wrappers[profile]
	if len(wrappers) == 0 {
		return nil
	}
	spec, err := workloadSpecKey(candidate)
	if err != nil {
		return nil
	}
	key := workloadKey{profile, spec}
	epoch := r.epoch.Load()
	ws := r.workloads[key]
	switch {
	case ws == nil:
		// A hash collision only computes a base at a workload's first candidate: still exact.
		h := maphash.String(r.seed, profile+"\x00"+spec)
		if _, again := r.once[h]; !again {
			r.once[h] = struct{}{}
			return nil
		}
		if len(r.workloads) >= reuseMaxWorkloads {
			return nil
		}
		ws = &workloadState{profile: profile, pod: candidate, epoch: epoch, bases: make(map[string]pluginState, len(wrappers))}
		r.workloads[key] = ws
	case ws.epoch != epoch:
		ws = &workloadState{profile: profile, pod: candidate, epoch: epoch, bases: make(map[string]pluginState, len(wrappers))}
		r.workloads[key] = ws
	}
	for _, w := range wrappers {
		if _, ok := ws.bases[w.Name()]; ok {
			continue
		}
		state := framework.NewCycleState()
		result, status := w.preFilter(ctx, state, ws.pod, allNodes)
		r.computed++
		switch {
		case status.IsSkip():
			ws.bases[w.Name()] = pluginState{skip: true}
		case status.IsSuccess():
			if data, err := state.Read(w.key); err == nil {
				ws.bases[w.Name()] = pluginState{data: data, result: result}
			}
		}
	}
	return ws
}

// prepare clones the workload's bases for one candidate and takes the candidate out of them with
// the plugins' RemovePod (removed: the candidate was taken off node in the snapshot). A base the
// extension fails on is left out: the plugin then computes its state for this candidate.
func (r *reuseCache) prepare(ctx context.Context, profile string, ws *workloadState, removed fwk.PodInfo, node fwk.NodeInfo) prepared {
	out := make(prepared, len(ws.bases))
	for _, w := range r.wrappers[profile] {
		base, ok := ws.bases[w.Name()]
		if !ok {
			continue
		}
		if base.skip {
			// InterPodAffinity skips when no term is involved; PodTopologySpread when the pod has no
			// hard constraint. Removing a pod from the snapshot involves no new term.
			out[w.Name()] = base
			r.reused++
			continue
		}
		st := pluginState{data: base.data.Clone(), result: base.result}
		if removed != nil {
			cs := framework.NewCycleState()
			cs.Write(w.key, st.data)
			if s := w.ext.RemovePod(ctx, cs, ws.pod, removed, node); !s.IsSuccess() {
				continue
			}
		}
		out[w.Name()] = st
		r.reused++
	}
	return out
}

// admit follows Admit's move of a pod (removed, as the snapshot held it, from origin; nil when the
// snapshot did not hold it) to dest (as moved) in every base, or drops the bases it cannot follow
// exactly (they are computed again at their workload's next prediction):
//   - InterPodAffinity: its RemovePod and AddPod keep its counts exact (the nodes Admit placed a pod
//     with affinity on are in the lists it walks, see snapshotLister). A Skip base (no term involves
//     the workload) is dropped when one of the moved pod's required anti-affinity terms matches the
//     workload's pod, and kept otherwise.
//   - PodTopologySpread: RemovePod is exact but AddPod only approximates the per-constraint minimum
//     the plugin keeps (its critical paths), so a base is dropped when the moved pod counts for it:
//     same namespace and labels matching the label selector of one of the workload's spread
//     constraints (matchLabelKeys only narrow that selector). A pod that does not count changes
//     nothing. A Skip base (no hard constraint) depends on the pod's spec alone.
func (r *reuseCache) admit(ctx context.Context, removed fwk.PodInfo, origin fwk.NodeInfo, moved fwk.PodInfo, dest fwk.NodeInfo) {
	if r == nil {
		return
	}
	logger := klog.FromContext(ctx)
	antiAffinity := moved.GetRequiredAntiAffinityTerms()
	for _, ws := range r.workloads {
		for name, base := range ws.bases {
			keep := false
			switch name {
			case names.InterPodAffinity:
				if base.skip {
					keep = !r.antiAffinityInvolves(logger, antiAffinity, ws.pod)
				} else {
					keep = r.update(ctx, ws, name, base, removed, origin, moved, dest)
				}
			case names.PodTopologySpread:
				keep = base.skip || (!spreadCounts(ws.pod, moved.GetPod()) && (removed == nil || !spreadCounts(ws.pod, removed.GetPod())))
			}
			if !keep {
				delete(ws.bases, name)
			}
		}
	}
}

// antiAffinityInvolves tells whether one of terms (a moved pod's required anti-affinity) matches
// pod, with the labels of pod's namespace as InterPodAffinity reads them.
func (r *reuseCache) antiAffinityInvolves(logger klog.Logger, terms []fwk.AffinityTerm, pod *corev1.Pod) bool {
	if len(terms) == 0 {
		return false
	}
	var nsLabels labels.Set
	if r.namespaces != nil {
		nsLabels = interpodaffinity.GetNamespaceLabelsSnapshot(logger, pod.Namespace, r.namespaces)
	}
	for _, t := range terms {
		if t.Matches(pod, nsLabels) {
			return true
		}
	}
	return false
}

// spreadCounts tells whether PodTopologySpread may count other in the spread of pod: same namespace
// and labels matching the selector of one of pod's constraints (or a selector that does not parse).
func spreadCounts(pod, other *corev1.Pod) bool {
	if other.Namespace != pod.Namespace {
		return false
	}
	for _, c := range pod.Spec.TopologySpreadConstraints {
		sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
		if err != nil || sel.Matches(labels.Set(other.Labels)) {
			return true
		}
	}
	return false
}

// update applies a move to a base in place with the plugin's extensions.
func (r *reuseCache) update(ctx context.Context, ws *workloadState, name string, base pluginState, removed fwk.PodInfo, origin fwk.NodeInfo, moved fwk.PodInfo, dest fwk.NodeInfo) bool {
	var w *sharedPreFilter
	for _, x := range r.wrappers[ws.profile] {
		if x.Name() == name {
			w = x
		}
	}
	if w == nil {
		return false
	}
	cs := framework.NewCycleState()
	cs.Write(w.key, base.data)
	if removed != nil {
		if s := w.ext.RemovePod(ctx, cs, ws.pod, removed, origin); !s.IsSuccess() {
			return false
		}
	}
	return w.ext.AddPod(ctx, cs, ws.pod, moved, dest).IsSuccess()
}

// snapshotLister is the SharedLister the simulator's frameworks read: the snapshot, whose lists of
// nodes with pods with affinity and with required anti-affinity also name the nodes Admit placed
// such a pod on this cycle (Snapshot.AssumePod adds the pod to its node but not the node to those
// lists, which only the cache's UpdateSnapshot rebuilds; InterPodAffinity's PreFilter and PreScore
// walk the lists, so without this an admitted pod's terms would be invisible to later predictions).
type snapshotLister struct {
	snapshot *internalcache.Snapshot
	// withAffinity and withAntiAffinity are the nodes added this cycle; reset by revert.
	withAffinity, withAntiAffinity []fwk.NodeInfo
	// narrowed, while a wrapped plugin runs, replaces the lists it reads (see labelIndex).
	narrowed narrowedLists
}

// narrowedLists are the lists a wrapped plugin is handed instead of the snapshot's; a nil pointer:
// the snapshot's.
type narrowedLists struct {
	all, withAffinity, withAntiAffinity *[]fwk.NodeInfo
}

func (l *snapshotLister) NodeInfos() fwk.NodeInfoLister           { return l }
func (l *snapshotLister) StorageInfos() fwk.StorageInfoLister     { return l.snapshot.StorageInfos() }
func (l *snapshotLister) PodGroupStates() fwk.PodGroupStateLister { return l.snapshot.PodGroupStates() }
func (l *snapshotLister) Get(name string) (fwk.NodeInfo, error)   { return l.snapshot.Get(name) }

func (l *snapshotLister) List() ([]fwk.NodeInfo, error) {
	if l.narrowed.all != nil {
		return *l.narrowed.all, nil
	}
	return l.snapshot.List()
}

func (l *snapshotLister) HavePodsWithAffinityList() ([]fwk.NodeInfo, error) {
	if l.narrowed.withAffinity != nil {
		return *l.narrowed.withAffinity, nil
	}
	list, err := l.snapshot.HavePodsWithAffinityList()
	if err != nil || len(l.withAffinity) == 0 {
		return list, err
	}
	return append(slices.Clip(list), l.withAffinity...), nil
}

func (l *snapshotLister) HavePodsWithRequiredAntiAffinityList() ([]fwk.NodeInfo, error) {
	if l.narrowed.withAntiAffinity != nil {
		return *l.narrowed.withAntiAffinity, nil
	}
	list, err := l.snapshot.HavePodsWithRequiredAntiAffinityList()
	if err != nil || len(l.withAntiAffinity) == 0 {
		return list, err
	}
	return append(slices.Clip(list), l.withAntiAffinity...), nil
}

// assumed records that node now holds pod (placed by Admit).
// The lists' criteria are NodeInfo's: a pod with any pod affinity or anti-affinity; a pod with
// required anti-affinity terms.
func (l *snapshotLister) assumed(pod *corev1.Pod, node fwk.NodeInfo) error {
	a := pod.Spec.Affinity
	if a == nil || (a.PodAffinity == nil && a.PodAntiAffinity == nil) {
		return nil
	}
	{
		list, err := l.snapshot.HavePodsWithAffinityList()
		if err != nil {
			return err
		}
		if !slices.Contains(list, node) && !slices.Contains(l.withAffinity, node) {
			l.withAffinity = append(l.withAffinity, node)
		}
	}
	if a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
		list, err := l.snapshot.HavePodsWithRequiredAntiAffinityList()
		if err != nil {
			return err
		}
		if !slices.Contains(list, node) && !slices.Contains(l.withAntiAffinity, node) {
			l.withAntiAffinity = append(l.withAntiAffinity, node)
		}
	}
	return nil
}

func (l *snapshotLister) reset() {
	l.withAffinity, l.withAntiAffinity = l.withAffinity[:0], l.withAntiAffinity[:0]
}
