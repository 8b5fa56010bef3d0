package simulation

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing/synctest"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/descheduler/evictions"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/nodecrdresourcefit"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/reservationfirst"
	fwruntime "github.com/accord-sched/accord/pkg/descheduler/framework/runtime"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
	"github.com/accord-sched/accord/pkg/descheduler/policy"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
	"github.com/accord-sched/accord/pkg/descheduler/simulator"
	accordfake "github.com/accord-sched/accord/pkg/generated/clientset/versioned/fake"
	accordinformers "github.com/accord-sched/accord/pkg/generated/informers/externalversions"
	"github.com/accord-sched/accord/pkg/informertransform"
	"github.com/accord-sched/accord/pkg/scheduler/crcache"
	"github.com/accord-sched/accord/pkg/scheduler/frameworks"
	schedplugins "github.com/accord-sched/accord/pkg/scheduler/plugins"
	"github.com/accord-sched/accord/pkg/scheduler/plugins/reservation"
)

const (
	gpu           corev1.ResourceName = "example.com/gpu"
	schedulerName                     = "accord-scheduler"
	// cycleInterval is --descheduling-interval in periodic mode.
	cycleInterval = 5 * time.Minute
	// tick is the longest the driver lets the fake clock run between two checks of the invariants.
	tick = time.Minute
	// openGrace is how long after a window opens, in event-only mode, a violator whose node's CR
	// changed while the window was closed may wait for its first eviction attempt.
	openGrace = 45 * time.Second
	// backoffCap is the cap of the event-triggered controller's back-off (client-go's default
	// controller rate limiter): a held node is retried at least this often.
	backoffCap = 1000 * time.Second
	// vmMigration is how long the simulated KubeVirt controller takes to migrate a VM.
	vmMigration = 2 * time.Minute
	// lostGrace is how long an evicted pod's workload may miss its replacement (a grace period of
	// up to 30 s, a VM's migration, the next tick).
	lostGrace = vmMigration + 2*time.Minute
	// leaseGap is how long no replica leads after a leader's lease is lost: the lease duration
	// and a retry period the manifests ship (15 s + 2 s).
	leaseGap = 17 * time.Second
)

var (
	podsGVR  = corev1.SchemeGroupVersion.WithResource("pods")
	podsGVK  = corev1.SchemeGroupVersion.WithKind("Pod")
	nodesGVR = corev1.SchemeGroupVersion.WithResource("nodes")
	rsGVR    = appsv1.SchemeGroupVersion.WithResource("replicasets")
	crGVR    = schedv1alpha1.SchemeGroupVersion.WithResource("clusterscopedresources")
	rsvGVR   = schedv1alpha1.SchemeGroupVersion.WithResource("reservations")
	rsvGVK   = schedv1alpha1.SchemeGroupVersion.WithKind("Reservation")
	pmGVR    = schedv1alpha1.SchemeGroupVersion.WithResource("podmigrations")
	pmGVK    = schedv1alpha1.SchemeGroupVersion.WithKind("PodMigration")
)

// schedulerConfig is accord-scheduler's shipped configuration: the placement oracle and the
// descheduler's SchedulerSimulation both run it.
func schedulerConfig() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "manifests", "scheduler", "config.yaml")
}

// Workload is one ReplicaSet of the simulated cluster.
type Workload struct {
	Replicas int
	// GPU pods request example.com/gpu: they violate a node whose CR does not enable it.
	GPU bool
	// VM pods are KubeVirt virt-launchers: annotated request-evict-only, their evictions are
	// answered 429 "Eviction triggered evacuation" and migrated by the (simulated) VM controller.
	VM        bool
	Namespace string
	// PDB, when set, is the workload's PodDisruptionBudget (pdb_test.go).
	PDB *PDB
}

// Config is one run's cluster and policy.
type Config struct {
	Zone  string
	Start time.Time
	// Window, when set, is the profile's daily eviction window [start, end) in Zone.
	Window     []string
	EventOnly  bool
	Soft       bool
	Background bool
	// PerNode is maxNoOfPodsToEvictPerNode; 0 leaves the policy without limits (the safe defaults).
	PerNode int
	// MaxMigrating is maxMigratingPerWorkload; 0 leaves the default.
	MaxMigrating int
	// SchedulerSimulation enables the preEvictionFilter that evicts only pods the scheduler would
	// place elsewhere.
	SchedulerSimulation bool
	SingleReplica       bool
	// PodsWithoutPDB: the DefaultEvictor protects pods no PodDisruptionBudget selects.
	PodsWithoutPDB bool
	// ReservationFirst enables the ReservationFirst evict plugin in the policy, and the Reservation
	// plugin, its placer and its collector in accord-scheduler.
	ReservationFirst bool
	// ReservationNodeFits: invariant reservation-first also requires the reservation's node to
	// still fit the pod (its ClusterScopedResource) as the eviction request arrives.
	ReservationNodeFits bool
	Nodes               int
	Workloads           []Workload
	// Metrics, when set, runs accord-metrics-reporter and a LowNodeLoad profile (metrics_test.go).
	Metrics *Metrics
}

// Action is one step of a run.
type Action struct {
	Kind string
	I, N int
	B    bool
	D    time.Duration
	// Answers are queued for the next eviction of each pod of workload I (accept, 500,
	// timeout), one each in turn.
	Answers []string
}

func (a Action) String() string {
	switch a.Kind {
	case "advance":
		return fmt.Sprintf("advance %s", a.D)
	case "cr":
		return fmt.Sprintf("cr node%d gpu=%t", a.I, a.B)
	case "burst":
		return fmt.Sprintf("burst w%d +%d", a.I, a.N)
	case "deletePod":
		return fmt.Sprintf("deletePod w%d #%d grace=%s", a.I, a.N, a.D)
	case "addNode":
		return fmt.Sprintf("addNode gpu=%t", a.B)
	case "deleteNode", "taint":
		return fmt.Sprintf("%s node%d", a.Kind, a.I)
	case "answers":
		return fmt.Sprintf("answers w%d %v", a.I, a.Answers)
	case "migrate":
		mode := "ReservationFirst"
		if a.B {
			mode = "EvictDirectly"
		}
		return fmt.Sprintf("migrate w%d #%d %s", a.I, a.N, mode)
	case "hot", "cool", "reporter":
		return metricActionString(a)
	case "leader":
		if a.B {
			return "leader change: scheduler"
		}
		return "leader change: descheduler"
	}
	return a.Kind
}

// startEvent is an eviction the descheduler started: accepted by the Eviction API, soft (annotated)
// or in background (answered "in progress").
type startEvent struct {
	pod       types.UID
	name      string
	workload  string
	node, ns  string
	kind      string
	at        time.Time // the fake clock (the budget's clock), not the simulated wall clock
	softEnded bool
	// churn is the world's churn when the eviction started, seq the last pod created then.
	churn, seq int
}

// violationError is a broken invariant.
type violationError struct{ msg string }

func (v *violationError) Error() string { return v.msg }

// world is the simulated cluster, its controllers and kubelets, the scheduler and one descheduler.
type world struct {
	cfg   Config
	kc    *kubefake.Clientset
	ac    *accordfake.Clientset
	loc   *time.Location
	epoch time.Time
	// ctx lives as long as the run.
	ctx    context.Context
	cancel context.CancelFunc

	sched     *simulator.Simulator
	schedStop func()
	// placerStop stops accord-scheduler's reservation placer and collector (ReservationFirst).
	placerStop func()
	schedCfg   *schedconfig.KubeSchedulerConfiguration
	// rsvSeq numbers the reservations of each generateName (each pod).
	rsvSeq map[string]int
	// killed: the descheduler is being killed (restart): its writes are lost.
	killed bool
	// churn counts the actions that may take a pod's place away; lost are the evictions whose
	// replacement checkNoPodLost awaits.
	churn int
	lost  []*startEvent
	pmSeq int
	// rsvChurn: per pod, the churn when its last reservation was made (the eviction's decision).
	rsvChurn map[types.UID]int
	// rsvGen: per reservation (namespace/name), the descheduler instance that made it.
	rsvGen map[string]int
	d      *instance
	gen    int

	// order numbers the placements of pods and reservations (all of a step may be at one instant):
	// placedAt per pod, rsvPlacedAt per reservation (namespace/name).
	order       int
	placedAt    map[types.UID]int
	rsvPlacedAt map[string]int

	mu        sync.Mutex
	trace     []string
	stepLog   []string
	violation string
	// limitWin counts the limiter's resets (cycles and, in event-only mode, limit windows).
	limitWin    uint64
	winStarts   map[uint64]map[string]map[types.UID]bool // window -> node or ns:<ns> or "" -> pods
	started     []*startEvent
	answers     map[types.UID][]string
	podSeq      int
	nodeSeq     int
	nodes       []string
	replicas    map[string]int
	terminating map[types.UID]time.Time
	migrating   map[types.UID]time.Time
	// crChanged: per node, when the current descheduler instance saw its CR change and the pods on
	// the node then.
	crChanged map[string]crChange
	// attempts: per node, the simulated time of the last eviction request (any answer).
	attempts map[string]time.Time
	// counts of what happened, for the trace's summary
	evicted, softened, background, refused int
	invariantChecks                        int
	// fitSince: per soft-annotated pod, since when it no longer violates (checkSoftCleared).
	fitSince map[types.UID]time.Time
	// movableSince: per violator checkWindowLiveness looks at, since when the scheduler would move
	// it; offeredAt: the last instant a CR started offering a resource (a CR change enabling the
	// GPU, a node added with its CR), on which the event-triggered controller retries its held
	// nodes; livenessAt: the last time checkWindowLiveness looked (openGrace after an opening on).
	movableSince          map[types.UID]time.Time
	offeredAt, livenessAt time.Time
	// m: NodeMetric reports and the LowNodeLoad oracle (metrics_test.go); nil without Metrics.
	m *metricsWorld
}

type crChange struct {
	at   time.Time
	gen  int
	pods map[types.UID]bool
}

// now is the simulated wall clock: the run's start plus the fake clock's time since the bubble
// began.
func (w *world) now() time.Time { return w.cfg.Start.Add(time.Since(w.epoch)) }

func (w *world) logf(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stepLog = append(w.stepLog, fmt.Sprintf(format, args...))
}

// fail records the first broken invariant (reactors run in the descheduler's goroutines: the driver
// reports it at its next check).
func (w *world) fail(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.violation == "" {
		w.violation = fmt.Sprintf("[%s] ", w.now().In(w.loc).Format("2006-01-02 15:04:05 MST")) + fmt.Sprintf(format, args...)
	}
}

func (w *world) failLocked(format string, args ...any) {
	if w.violation == "" {
		w.violation = fmt.Sprintf("[%s] ", w.now().In(w.loc).Format("2006-01-02 15:04:05 MST")) + fmt.Sprintf(format, args...)
	}
}

// flush appends the step's events (sorted: the descheduler's evictions overlap) to the trace.
func (w *world) flush(step string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	slices.Sort(w.stepLog)
	line := fmt.Sprintf("%s %s", w.now().In(w.loc).Format("01-02 15:04:05 MST"), step)
	if len(w.stepLog) > 0 {
		line += ": " + strings.Join(w.stepLog, ", ")
	}
	w.trace = append(w.trace, line)
	w.stepLog = nil
}

// --- the cluster -------------------------------------------------------------------------------

func nodeName(i int) string { return fmt.Sprintf("node%d", i) }

func newNode(name string) *corev1.Node {
	alloc := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("8"),
		corev1.ResourceMemory: resource.MustParse("32Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
		gpu:                   resource.MustParse("100"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Status: corev1.NodeStatus{Allocatable: alloc, Capacity: alloc,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
}

func newCR(node string, gpuOK bool) *schedv1alpha1.ClusterScopedResource {
	return &schedv1alpha1.ClusterScopedResource{
		ObjectMeta: metav1.ObjectMeta{Name: node},
		Spec: schedv1alpha1.ClusterScopedResourceSpec{
			ResourcesFilter: map[corev1.ResourceName]bool{corev1.ResourceCPU: true, corev1.ResourceMemory: true, gpu: gpuOK},
			ResourcesScore:  map[corev1.ResourceName]schedv1alpha1.ResourceScore{gpu: 50},
		},
	}
}

func workloadName(i int) string { return fmt.Sprintf("w%d", i) }

func (w *world) newPod(i int) *corev1.Pod {
	spec := w.cfg.Workloads[i]
	w.podSeq++
	name := fmt.Sprintf("%s-%d", workloadName(i), w.podSeq)
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}
	if spec.GPU {
		req[gpu] = resource.MustParse("1")
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: spec.Namespace, Name: name, UID: types.UID("uid-" + name),
			// The budget's clock is the fake clock, not the simulated wall clock.
			CreationTimestamp: metav1.NewTime(time.Now().Truncate(time.Second)),
			Labels:            map[string]string{"workload": workloadName(i)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: workloadName(i),
				UID: types.UID("uid-" + workloadName(i)), Controller: ptrTo(true)}},
		},
		Spec: corev1.PodSpec{
			// A priority of its own: the descheduler evicts a node's violators lowest priority
			// first, and pods of one priority in the pod cache's order, which no seed replays.
			Priority:      ptrTo(int32(w.podSeq)),
			SchedulerName: schedulerName,
			Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: req, Limits: func() corev1.ResourceList {
				if spec.GPU {
					return corev1.ResourceList{gpu: resource.MustParse("1")}
				}
				return nil
			}()}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if spec.VM {
		p.Annotations = map[string]string{evictions.RequestEvictOnlyAnnotation: ""}
	}
	return p
}

func ptrTo[T any](v T) *T { return &v }

func (w *world) pods() []*corev1.Pod {
	obj, err := w.kc.Tracker().List(podsGVR, podsGVK, "")
	if err != nil {
		panic(err)
	}
	list := obj.(*corev1.PodList)
	out := make([]*corev1.Pod, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

func (w *world) pod(ns, name string) (*corev1.Pod, bool) {
	obj, err := w.kc.Tracker().Get(podsGVR, ns, name)
	if err != nil {
		return nil, false
	}
	return obj.(*corev1.Pod), true
}

func (w *world) cr(node string) *schedv1alpha1.ClusterScopedResource {
	obj, err := w.ac.Tracker().Get(crGVR, "", node)
	if err != nil {
		return nil
	}
	return obj.(*schedv1alpha1.ClusterScopedResource)
}

// violates is the oracle of NodeCRDResourceFit (missingCRPolicy Reject): the pod requests a
// resource its node's CR does not enable.
func (w *world) violates(p *corev1.Pod) bool {
	if p.Spec.NodeName == "" {
		return false
	}
	_, bad := nodecrdresourcefit.Violation(w.cr(p.Spec.NodeName), "Reject", p, nil)
	return bad
}

func workloadOf(p *corev1.Pod) string {
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
		return ref.Name
	}
	return ""
}

func ready(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func softAnnotated(p *corev1.Pod) bool {
	_, ok := p.Annotations[evictions.SoftEvictionAnnotation]
	return ok
}

// inProgress: the pod's eviction is in progress outside the Eviction API (what the descheduler's
// tracker must count, until the pod is gone: terminating included).
func (w *world) inProgress(p *corev1.Pod) bool {
	if softAnnotated(p) {
		return true
	}
	_, marked := p.Annotations[evictions.EvictionInProgressAnnotation]
	_, evictOnly := p.Annotations[evictions.RequestEvictOnlyAnnotation]
	return w.cfg.Background && marked && evictOnly
}

// setup creates the cluster, the scheduler and the reactors, and starts the first descheduler.
func (w *world) setup() error {
	w.kc = kubefake.NewClientset()
	// NewClientset tracks field management, which needs OpenAPI models this fake lacks.
	w.ac = accordfake.NewSimpleClientset() //nolint:staticcheck // see above
	w.replicas = map[string]int{}
	w.terminating = map[types.UID]time.Time{}
	w.migrating = map[types.UID]time.Time{}
	w.crChanged = map[string]crChange{}
	w.movableSince = map[types.UID]time.Time{}
	w.attempts = map[string]time.Time{}
	w.winStarts = map[uint64]map[string]map[types.UID]bool{}
	w.answers = map[types.UID][]string{}
	w.rsvSeq = map[string]int{}
	w.rsvGen = map[string]int{}
	w.rsvChurn = map[types.UID]int{}
	w.placedAt = map[types.UID]int{}
	w.rsvPlacedAt = map[string]int{}
	for i := 0; i < w.cfg.Nodes; i++ {
		if err := w.addNode(i%3 != 2); err != nil {
			return err
		}
	}
	for i, spec := range w.cfg.Workloads {
		rs := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: spec.Namespace, Name: workloadName(i), UID: types.UID("uid-" + workloadName(i))},
			Spec:       appsv1.ReplicaSetSpec{Replicas: ptrTo(int32(spec.Replicas))},
		}
		if err := w.kc.Tracker().Create(rsGVR, rs, spec.Namespace); err != nil {
			return err
		}
		w.replicas[workloadName(i)] = spec.Replicas
	}
	if err := w.createPDBs(); err != nil {
		return err
	}
	w.installReactors()
	if err := w.setupMetrics(); err != nil {
		return err
	}
	if err := w.startScheduler(); err != nil {
		return err
	}
	w.reconcile()
	return w.startDescheduler()
}

func (w *world) addNode(gpuOK bool) error {
	name := nodeName(w.nodeSeq)
	w.nodeSeq++
	if err := w.kc.Tracker().Create(nodesGVR, newNode(name), ""); err != nil {
		return err
	}
	if err := w.ac.Tracker().Create(crGVR, newCR(name, gpuOK), ""); err != nil {
		return err
	}
	w.nodes = append(w.nodes, name)
	w.offeredAt = w.now()
	return nil
}

// startScheduler builds accord-scheduler's framework (its shipped configuration) over informers of
// the cluster: the placement oracle of the simulated ReplicaSet controller.
func (w *world) startScheduler() error {
	cfg, err := simulator.LoadConfig(schedulerConfig())
	if err != nil {
		return err
	}
	if w.cfg.ReservationFirst {
		// What the chart's scheduler configuration adds with descheduler.reservationFirst.
		for i := range cfg.Profiles {
			if cfg.Profiles[i].SchedulerName == schedulerName {
				mp := &cfg.Profiles[i].Plugins.MultiPoint
				mp.Enabled = append(mp.Enabled, schedconfig.Plugin{Name: reservation.Name})
			}
		}
	}
	ctx, cancel := context.WithCancel(w.ctx)
	f := informers.NewSharedInformerFactory(w.kc, 0)
	af := accordinformers.NewSharedInformerFactory(w.ac, 0)
	s, err := simulator.New(ctx, simulator.Options{Config: cfg, Client: w.kc, InformerFactory: f, AccordInformerFactory: af, Parallelism: 1})
	if err != nil {
		cancel()
		return err
	}
	f.Start(ctx.Done())
	af.Start(ctx.Done())
	synctest.Wait()
	w.sched = s
	w.schedStop = func() {
		cancel()
		f.Shutdown()
		af.Shutdown()
	}
	if w.cfg.ReservationFirst {
		w.schedCfg = cfg
		return w.startPlacer(cfg)
	}
	return nil
}

// startPlacer starts what accord-scheduler's leader runs beside its scheduling loop when a profile
// enables the Reservation plugin (pkg/scheduler/server): the reservation placer, which places each
// Pending reservation with that profile's framework, and the collector, which ends and deletes
// reservations. The replacement pods are placed by the placement oracle (the simulator, whose
// profile enables the Reservation plugin too, so they go into their reservations).
func (w *world) startPlacer(cfg *schedconfig.KubeSchedulerConfiguration) error {
	var profiles []schedconfig.KubeSchedulerProfile
	for _, prof := range cfg.Profiles {
		if prof.SchedulerName == schedulerName {
			profiles = append(profiles, prof)
		}
	}
	ctx, cancel := context.WithCancel(klog.NewContext(w.ctx, klog.Background()))
	f := informers.NewSharedInformerFactory(w.kc, 0)
	af := accordinformers.NewSharedInformerFactory(w.ac, 0)
	crs := crcache.NewForFactory(af, nil)
	fail := func(err error) error {
		cancel()
		return fmt.Errorf("the reservation placer: %w", err)
	}
	rsv, err := crs.Reservations(ctx, nil)
	if err != nil {
		return fail(err)
	}
	reg, err := frameworks.Registry(schedplugins.Registry(schedplugins.Descriptors(), crs))
	if err != nil {
		return fail(err)
	}
	placer, err := reservation.NewPlacer(ctx, reservation.PlacerConfig{
		Profiles: profiles, ComponentConfigVersion: cfg.APIVersion, Registry: reg, Client: w.kc,
		InformerFactory: f, Reservations: rsv, Ledger: reservation.LedgerOf(crs), Accord: w.ac, CRs: crs,
	})
	if err != nil {
		return fail(err)
	}
	collector, err := reservation.NewCollector(reservation.CollectorConfig{Accord: w.ac, Reservations: rsv, Nodes: f.Core().V1().Nodes().Informer()})
	if err != nil {
		return fail(err)
	}
	f.Start(ctx.Done())
	af.Start(ctx.Done())
	// The informers' first lists are in before the placer and the collector start: they wait for
	// them with a 100 ms poll (cache.WaitForCacheSync), so a first look made before the lists were
	// in would start them 100 ms later on the fake clock, after whatever the next step does at this
	// instant (a reservation created then was placed in one run and not in another).
	synctest.Wait()
	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{placer.Run, collector.Run} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := run(ctx); err != nil {
				w.fail("accord-scheduler's reservation placer or collector: %v", err)
			}
		}()
	}
	synctest.Wait()
	w.placerStop = func() {
		cancel()
		wg.Wait()
		f.Shutdown()
		af.Shutdown()
	}
	return nil
}

// stopPlacer stops the reservation placer and collector (a scheduler that loses its lease exits).
func (w *world) stopPlacer() {
	if w.placerStop != nil {
		w.placerStop()
		w.placerStop = nil
		synctest.Wait()
	}
}

// --- reactors: the apiserver's answers and the checks made at the moment of each request ------------

func (w *world) installReactors() {
	// The apiserver names a reservation from its generateName and stamps its UID and creation time
	// (its TTL runs from it); the fake clientset does neither. Names are per pod, so they replay.
	w.ac.PrependReactor("create", "reservations", func(action clienttesting.Action) (bool, k8sruntime.Object, error) {
		r := action.(clienttesting.CreateAction).GetObject().(*schedv1alpha1.Reservation)
		if r.Name == "" {
			w.mu.Lock()
			w.rsvSeq[r.GenerateName]++
			n := w.rsvSeq[r.GenerateName]
			w.mu.Unlock()
			r.Name = fmt.Sprintf("%s%d", r.GenerateName, n)
		}
		r.UID = types.UID("uid-rsv-" + r.Name)
		w.mu.Lock()
		w.rsvGen[r.Namespace+"/"+r.Name] = w.gen
		w.rsvChurn[types.UID(r.Labels[reservationfirst.LabelPodUID])] = w.churn
		w.mu.Unlock()
		r.CreationTimestamp = metav1.NewTime(time.Now().Truncate(time.Second))
		return false, nil, nil
	})
	w.kc.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, k8sruntime.Object, error) {
		if action.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		ev := action.(clienttesting.CreateAction).GetObject().(*policyv1.Eviction)
		return true, nil, w.evict(ev)
	})
	w.kc.PrependReactor("patch", "pods", func(action clienttesting.Action) (bool, k8sruntime.Object, error) {
		pa := action.(clienttesting.PatchAction)
		w.observePatch(pa.GetNamespace(), pa.GetName(), pa.GetPatch())
		return false, nil, nil
	})
	w.kc.PrependReactor("delete", "pods", func(action clienttesting.Action) (bool, k8sruntime.Object, error) {
		w.fail("invariant evictions-only: the descheduler deleted pod %s/%s instead of evicting it", action.GetNamespace(), action.(clienttesting.DeleteAction).GetName())
		return false, nil, nil
	})
	// README: a reservation is consumed by the replacement of the pod it was made for, a sibling's
	// only once that pod is evicted (else its own eviction finds the room gone). Checked as the
	// placer writes Bound: the eviction that waits for the reservation gives up, and deletes it,
	// at its next poll.
	w.ac.PrependReactor("update", "reservations", func(action clienttesting.Action) (bool, k8sruntime.Object, error) {
		r, ok := action.(clienttesting.UpdateAction).GetObject().(*schedv1alpha1.Reservation)
		if ok && r.Status.Phase == schedv1alpha1.ReservationAvailable {
			w.mu.Lock()
			if _, seen := w.rsvPlacedAt[r.Namespace+"/"+r.Name]; !seen {
				w.order++
				w.rsvPlacedAt[r.Namespace+"/"+r.Name] = w.order
			}
			w.mu.Unlock()
		}
		if !ok || r.Status.Phase != schedv1alpha1.ReservationBound || r.Status.BoundPod == nil {
			return false, nil, nil
		}
		// README: a reservation is consumed by a pod placed into it, never by one that ran on its
		// node before it was placed there (that pod's room was counted beside the reservation's).
		w.mu.Lock()
		podAt, placed := w.placedAt[r.Status.BoundPod.UID]
		rsvAt := w.rsvPlacedAt[r.Namespace+"/"+r.Name]
		w.mu.Unlock()
		if placed && podAt < rsvAt {
			w.fail("invariant reservation-consumer: reservation %s/%s (made for %s) is Bound to %s, which was placed on %s before the reservation was placed there",
				r.Namespace, r.Name, r.Labels[reservationfirst.LabelPodName], r.Status.BoundPod.Name, r.Status.NodeName)
		}
		if p, found := w.pod(r.Namespace, r.Labels[reservationfirst.LabelPodName]); found && string(p.UID) == r.Labels[reservationfirst.LabelPodUID] && p.DeletionTimestamp == nil {
			w.fail("invariant reservation-taken-by-sibling: reservation %s/%s, made for %s, is Bound to %s while %s still runs (not evicted)",
				r.Namespace, r.Name, p.Name, r.Status.BoundPod.Name, p.Name)
		}
		return false, nil, nil
	})
	// The descheduler's writes while it is being killed (restart) are lost (first in the chains).
	for _, c := range []interface {
		PrependReactor(verb, resource string, reaction clienttesting.ReactionFunc)
	}{w.kc, w.ac} {
		c.PrependReactor("*", "*", func(action clienttesting.Action) (bool, k8sruntime.Object, error) {
			killable := action.GetResource().Resource == "pods" && (action.GetVerb() == "patch" || action.GetSubresource() == "eviction") ||
				action.GetResource().Resource == "reservations" && action.GetVerb() == "delete"
			if err := w.dead(); killable && err != nil {
				return true, nil, err
			}
			return false, nil, nil
		})
	}
}

// evict answers an Eviction: the queued answer, else 429 "Eviction triggered evacuation" for a VM
// (KubeVirt's webhook), else the pod's PodDisruptionBudget's answer (admitEviction), else accepted
// (the pod terminates over its grace period).
func (w *world) evict(ev *policyv1.Eviction) error {
	p, ok := w.pod(ev.Namespace, ev.Name)
	if !ok {
		return apierrors.NewNotFound(podsGVR.GroupResource(), ev.Name)
	}
	if d := ev.DeleteOptions; d != nil && d.Preconditions != nil && d.Preconditions.UID != nil && *d.Preconditions.UID != p.UID {
		return apierrors.NewConflict(podsGVR.GroupResource(), ev.Name, fmt.Errorf("UID precondition"))
	}
	// README: a pod of accord-scheduler is never evicted without a placed reservation (Available
	// on a node other than its own), whatever the apiserver then answers.
	if w.cfg.ReservationFirst && p.Spec.SchedulerName == schedulerName && p.DeletionTimestamp == nil && !w.evictDirectly(p) {
		if msg := w.reservationOf(p); msg != "" {
			w.fail("invariant reservation-first: eviction of %s (node %s) requested %s", p.Name, p.Spec.NodeName, msg)
		}
	}
	w.mu.Lock()
	w.attempts[p.Spec.NodeName] = w.now()
	answer := "accept"
	if q := w.answers[p.UID]; len(q) > 0 {
		answer, w.answers[p.UID] = q[0], q[1:]
	} else if _, vm := p.Annotations[evictions.RequestEvictOnlyAnnotation]; vm {
		answer = "evacuate"
	}
	w.mu.Unlock()
	switch answer {
	case "500":
		w.refusal(p, answer)
		return apierrors.NewInternalError(fmt.Errorf("etcdserver: leader changed"))
	case "timeout":
		w.refusal(p, answer)
		return apierrors.NewTimeoutError("request did not complete within the allowed duration", 0)
	case "evacuate":
		if p.DeletionTimestamp != nil {
			return nil
		}
		w.start(p, "background")
		w.mu.Lock()
		_, already := w.migrating[p.UID]
		if !already {
			w.migrating[p.UID] = w.now()
		}
		w.mu.Unlock()
		if !already {
			q := p.DeepCopy()
			q.Annotations[evictions.EvictionInProgressAnnotation] = "migrating"
			if err := w.kc.Tracker().Update(podsGVR, q, q.Namespace); err != nil {
				return err
			}
		}
		return apierrors.NewTooManyRequests(fmt.Sprintf("%s of VMI %s/%s", evictions.EvictionInBackgroundErrorText, p.Namespace, p.Name), 0)
	}
	if p.DeletionTimestamp != nil {
		return nil
	}
	if err := w.admitEviction(p); err != nil {
		w.refusal(p, "pdb")
		return err
	}
	w.start(p, "api")
	grace := int64(10)
	if d := ev.DeleteOptions; d != nil && d.GracePeriodSeconds != nil {
		grace = *d.GracePeriodSeconds
	}
	q := p.DeepCopy()
	q.DeletionTimestamp = ptrTo(metav1.NewTime(time.Now()))
	q.DeletionGracePeriodSeconds = &grace
	w.mu.Lock()
	w.terminating[q.UID] = time.Now().Add(time.Duration(grace) * time.Second)
	w.mu.Unlock()
	return w.kc.Tracker().Update(podsGVR, q, q.Namespace)
}

// evictDirectly: a PodMigration in mode EvictDirectly names p (it evicts with no reservation).
func (w *world) evictDirectly(p *corev1.Pod) bool {
	obj, err := w.ac.Tracker().List(pmGVR, pmGVK, p.Namespace)
	if err != nil {
		panic(err)
	}
	for _, pm := range obj.(*schedv1alpha1.PodMigrationList).Items {
		if pm.Spec.PodName == p.Name && pm.Spec.Mode == schedv1alpha1.PodMigrationEvictDirectly && (pm.Status.PodUID == "" || pm.Status.PodUID == p.UID) {
			return true
		}
	}
	return false
}

// reservations are the cluster's Reservations, by name.
func (w *world) reservations() []*schedv1alpha1.Reservation {
	obj, err := w.ac.Tracker().List(rsvGVR, rsvGVK, "")
	if err != nil {
		panic(err)
	}
	list := obj.(*schedv1alpha1.ReservationList)
	out := make([]*schedv1alpha1.Reservation, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Namespace+"/"+out[a].Name < out[b].Namespace+"/"+out[b].Name })
	return out
}

// reservationOf is "" when a reservation made for p is placed (Available, not expired) on a node
// other than p's, else what is wrong.
func (w *world) reservationOf(p *corev1.Pod) string {
	var seen []string
	for _, r := range w.reservations() {
		if r.Namespace != p.Namespace || r.Labels[reservationfirst.LabelPodUID] != string(p.UID) {
			continue
		}
		if reservation.Holding(r, time.Now()) && r.Status.NodeName != p.Spec.NodeName {
			_, stopped := nodecrdresourcefit.Violation(w.cr(r.Status.NodeName), "Reject", p, nil)
			if !w.cfg.ReservationNodeFits || !stopped {
				return ""
			}
			seen = append(seen, fmt.Sprintf("%s %q on %q, whose CR no longer fits the pod", r.Name, r.Status.Phase, r.Status.NodeName))
			continue
		}
		seen = append(seen, fmt.Sprintf("%s %q on %q", r.Name, r.Status.Phase, r.Status.NodeName))
	}
	if len(seen) == 0 {
		return "with no reservation"
	}
	return "with no placed reservation (" + strings.Join(seen, ", ") + ")"
}

func (w *world) refusal(p *corev1.Pod, answer string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.refused++
	w.stepLog = append(w.stepLog, fmt.Sprintf("%s:%s", answer, p.Name))
}

// observePatch sees the soft evictor's annotations being set and removed.
func (w *world) observePatch(ns, name string, patch []byte) {
	var body struct {
		Metadata struct {
			Annotations map[string]*string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(patch, &body); err != nil {
		return
	}
	v, ok := body.Metadata.Annotations[evictions.SoftEvictionAnnotation]
	if !ok {
		return
	}
	p, found := w.pod(ns, name)
	if !found {
		return
	}
	if v != nil {
		if !softAnnotated(p) {
			w.start(p, "soft")
		}
		return
	}
	if !softAnnotated(p) {
		return
	}
	// README: a Soft profile "removes the annotations once the pods no longer violate".
	if w.violates(p) {
		w.fail("invariant soft-annotation-kept: the soft-eviction annotation of %s/%s (node %s) is removed while the pod still violates its node's ClusterScopedResource", ns, name, p.Spec.NodeName)
	}
	w.mu.Lock()
	for _, s := range w.started {
		if s.pod == p.UID && s.kind == "soft" {
			s.softEnded = true
		}
	}
	w.stepLog = append(w.stepLog, "unsoft:"+name)
	w.mu.Unlock()
}

// start checks, at the moment an eviction starts, the window, the caps and the workload budget,
// and records it.
func (w *world) start(p *corev1.Pod, kind string) {
	now := w.now()
	pods := w.pods()
	// An EvictDirectly PodMigration evicts whether or not the pod has a place (its user asked).
	direct := w.cfg.ReservationFirst && w.evictDirectly(p)
	// The DefaultEvictor's PodsWithoutPDB protection: no eviction of a pod no budget selects.
	if w.protectedWithoutPDB(p) {
		w.fail("invariant pods-without-pdb: %s eviction of %s, which no PodDisruptionBudget selects (podProtections PodsWithoutPDB)", kind, p.Name)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch kind {
	case "api":
		w.evicted++
	case "soft":
		w.softened++
	case "background":
		w.background++
	}
	w.stepLog = append(w.stepLog, kind+":"+p.Name)
	wl := workloadOf(p)
	// Windows: "the profile evicts only while one is open", at the wall-clock times of its zone.
	if w.cfg.Window != nil && !w.windowOpen(now) {
		w.failLocked("invariant window: %s eviction of %s while the window %s-%s %s is closed (local time %s)",
			kind, p.Name, w.cfg.Window[0], w.cfg.Window[1], w.cfg.Zone, now.In(w.loc).Format("2006-01-02 15:04:05 MST"))
	}
	// Single-replica workloads are held unless evictSingleReplicaWorkloads.
	if wl == "" {
		w.failLocked("invariant workload: %s eviction of %s, a pod without a workload", kind, p.Name)
	} else if w.replicas[wl] <= 1 && !w.cfg.SingleReplica {
		w.failLocked("invariant evictSingleReplicaWorkloads: %s eviction of %s, the only pod of %s", kind, p.Name, wl)
	}
	// Caps: new evictions of this window plus the evictions in progress (they count in every
	// window) stay within each cap.
	win := w.winStarts[w.limitWin]
	if win == nil {
		win = map[string]map[types.UID]bool{}
		w.winStarts[w.limitWin] = win
	}
	add := func(key string) map[types.UID]bool {
		if win[key] == nil {
			win[key] = map[types.UID]bool{}
		}
		win[key][p.UID] = true
		out := map[types.UID]bool{}
		for u := range win[key] {
			out[u] = true
		}
		return out
	}
	onNode, all := add("node:"+p.Spec.NodeName), add("")
	for _, q := range pods {
		if w.inProgress(q) && q.UID != p.UID {
			all[q.UID] = true
			if q.Spec.NodeName == p.Spec.NodeName {
				onNode[q.UID] = true
			}
		}
	}
	perNode, total := 2, 50
	if w.cfg.PerNode > 0 {
		perNode, total = w.cfg.PerNode, 1<<30
	}
	if len(onNode) > perNode {
		w.failLocked("invariant caps: %s eviction of %s makes %d evictions on node %s in one limit window (cap %d), counting those in progress", kind, p.Name, len(onNode), p.Spec.NodeName, perNode)
	}
	if len(all) > total {
		w.failLocked("invariant caps: %d evictions in one limit window (cap %d)", len(all), total)
	}
	// Budget: the workload's evictions not yet replaced (and those in progress) stay within
	// maxMigratingPerWorkload.
	if wl != "" {
		w.resolveLocked(pods)
		n := 1
		for _, s := range w.started {
			if s.workload == wl && s.pod != p.UID {
				n++
			}
		}
		if limit := w.maxMigrating(wl); n > limit {
			w.failLocked("invariant budget: %s eviction of %s makes %d evictions of %s not yet replaced (maxMigratingPerWorkload %d)", kind, p.Name, n, wl, limit)
		}
	}
	ev := &startEvent{pod: p.UID, name: p.Name, workload: wl, node: p.Spec.NodeName, ns: p.Namespace, kind: kind, at: time.Now(), churn: w.churn, seq: w.podSeq}
	if c, ok := w.rsvChurn[p.UID]; ok && c != w.churn {
		// The cluster changed between the reservation and the eviction: its place may be gone
		// (the placer fails a reservation whose node stops fitting, but an eviction may still go
		// in that instant; README "What it found").
		ev.churn = -1
	}
	w.started = append(w.started, ev)
	if (w.cfg.ReservationFirst || w.cfg.SchedulerSimulation) && kind != "soft" && wl != "" && !direct {
		w.lost = append(w.lost, ev)
	}
}

func (w *world) maxMigrating(wl string) int {
	r := w.replicas[wl]
	if w.cfg.MaxMigrating > 0 {
		return w.cfg.MaxMigrating
	}
	d := evictions.DefaultWorkloadLimit(r)
	n := d.IntValue()
	if d.Type == 1 { // a percentage
		n = r * 10 / 100
	}
	return max(n, 1)
}

// resolveLocked forgets the started evictions that are over: a soft one whose annotation was removed,
// and any whose pod is gone (or terminating) and replaced by a Ready pod of its workload created
// since (each replacement counts once), or whose workload has all its replicas Ready. w.mu held.
func (w *world) resolveLocked(pods []*corev1.Pod) {
	present := map[types.UID]bool{}
	readyOf := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			present[p.UID] = true
		}
	}
	startedUID := map[types.UID]bool{}
	for _, s := range w.started {
		startedUID[s.pod] = true
	}
	for _, p := range pods {
		if ready(p) && !startedUID[p.UID] {
			readyOf[workloadOf(p)] = append(readyOf[workloadOf(p)], p)
		}
	}
	used := map[types.UID]bool{}
	kept := w.started[:0]
	for _, s := range w.started {
		switch {
		case s.softEnded:
			continue
		case present[s.pod]:
			kept = append(kept, s)
			continue
		}
		replaced := len(readyOf[s.workload]) >= w.replicas[s.workload]
		for _, p := range readyOf[s.workload] {
			if !used[p.UID] && !p.CreationTimestamp.Time.Before(s.at.Truncate(time.Second)) {
				used[p.UID], replaced = true, true
				break
			}
		}
		if !replaced {
			kept = append(kept, s)
		}
	}
	w.started = kept
}

// --- the simulated kubelets, ReplicaSet and VM controllers, and the scheduler -------------------

// reconcile plays the rest of the cluster until it is still: terminations whose grace period is over
// end, VM migrations finish, each ReplicaSet gets back to its replicas, and the scheduler (its
// framework) places the pending pods; a placed pod is Running and Ready at once.
func (w *world) reconcile() {
	synctest.Wait()
	now := time.Now()
	for _, p := range w.pods() {
		w.mu.Lock()
		end, term := w.terminating[p.UID]
		mig, vm := w.migrating[p.UID]
		w.mu.Unlock()
		if (term && !now.Before(end)) || (vm && !w.now().Before(mig.Add(vmMigration))) {
			w.remove(p)
		}
	}
	live := map[string]int{}
	for _, p := range w.pods() {
		if p.DeletionTimestamp == nil {
			live[workloadOf(p)]++
		}
	}
	for i := range w.cfg.Workloads {
		wl := workloadName(i)
		for n := live[wl]; n < w.replicas[wl]; n++ {
			p := w.newPod(i)
			if err := w.kc.Tracker().Create(podsGVR, p, p.Namespace); err != nil {
				panic(err)
			}
		}
	}
	synctest.Wait()
	for _, p := range w.pods() {
		if p.Spec.NodeName != "" || p.DeletionTimestamp != nil {
			continue
		}
		pred, err := w.sched.Predict(w.ctx, p)
		if err != nil || !pred.Feasible {
			continue
		}
		q := p.DeepCopy()
		q.Spec.NodeName = pred.Node
		q.Status.Phase = corev1.PodRunning
		q.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Now())}}
		if err := w.kc.Tracker().Update(podsGVR, q, q.Namespace); err != nil {
			panic(err)
		}
		w.logf("placed:%s@%s", q.Name, q.Spec.NodeName)
		w.mu.Lock()
		w.order++
		w.placedAt[q.UID] = w.order
		w.mu.Unlock()
		synctest.Wait()
	}
	w.syncPDBs()
	w.mu.Lock()
	w.resolveLocked(w.pods())
	w.mu.Unlock()
	w.metricsTick()
}

func (w *world) remove(p *corev1.Pod) {
	if err := w.kc.Tracker().Delete(podsGVR, p.Namespace, p.Name); err != nil && !apierrors.IsNotFound(err) {
		panic(err)
	}
	w.mu.Lock()
	delete(w.terminating, p.UID)
	delete(w.migrating, p.UID)
	w.mu.Unlock()
}

// --- the descheduler ------------------------------------------------------------------------------

// instance is one run of accord-descheduler: its own informers over the cluster, the real runtime
// built from the policy, its cycles (or, in event-only mode, its limit windows) and controllers.
type instance struct {
	d     *fwruntime.Descheduler
	guard *informertransform.Guard
	stop  func()
}

func (w *world) policy() string {
	var b strings.Builder
	b.WriteString("apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n")
	if w.cfg.PerNode > 0 {
		fmt.Fprintf(&b, "maxNoOfPodsToEvictPerNode: %d\n", w.cfg.PerNode)
	}
	if w.cfg.MaxMigrating > 0 {
		fmt.Fprintf(&b, "maxMigratingPerWorkload: %d\n", w.cfg.MaxMigrating)
	}
	if w.cfg.SingleReplica {
		b.WriteString("evictSingleReplicaWorkloads: true\n")
	}
	b.WriteString("profiles:\n- name: fit\n")
	if w.cfg.Soft {
		b.WriteString("  evictionMode: Soft\n")
	}
	if w.cfg.Window != nil {
		fmt.Fprintf(&b, "  evictionWindows:\n  - {start: %q, end: %q, timeZone: %s}\n", w.cfg.Window[0], w.cfg.Window[1], w.cfg.Zone)
	}
	b.WriteString("  pluginConfig:\n  - name: DefaultEvictor\n")
	if w.cfg.PodsWithoutPDB {
		b.WriteString("    args: {podProtections: {extraEnabled: [PodsWithoutPDB]}}\n")
	}
	b.WriteString("  - name: NodeCRDResourceFit\n")
	if w.cfg.ReservationFirst {
		b.WriteString("  - name: ReservationFirst\n")
	}
	if w.cfg.SchedulerSimulation {
		fmt.Fprintf(&b, "  - name: SchedulerSimulation\n    args: {schedulerConfigFile: %q}\n", schedulerConfig())
	}
	if w.cfg.ReservationFirst {
		// PodMigration moves pods reservation-first, through this profile's evict plugin.
		b.WriteString("  plugins:\n    deschedule: {enabled: [NodeCRDResourceFit, PodMigration]}\n")
	} else {
		b.WriteString("  plugins:\n    deschedule: {enabled: [NodeCRDResourceFit]}\n")
	}
	if !w.cfg.SchedulerSimulation {
		b.WriteString("    preEvictionFilter: {disabled: [SchedulerSimulation]}\n")
	}
	if w.cfg.ReservationFirst {
		b.WriteString("    evict: {enabled: [ReservationFirst]}\n")
	}
	b.WriteString(w.loadProfile())
	return b.String()
}

func (w *world) startDescheduler() error {
	w.gen++
	p, err := policy.Decode([]byte(w.policy()), plugins.NewInTreeArgs())
	if err != nil {
		return fmt.Errorf("policy: %w\n%s", err, w.policy())
	}
	reg := plugins.NewInTreeRegistry()
	if errs := policy.Validate(p, reg, plugins.NewInTreeArgs()); len(errs) > 0 {
		return fmt.Errorf("policy: %v", errs.ToAggregate())
	}
	if w.m != nil {
		if p, reg, err = w.policyFollowingScheduler(); err != nil {
			return fmt.Errorf("policy with --scheduler-config-file: %w\n%s", err, w.policy())
		}
	}
	ctx, cancel := context.WithCancel(klog.NewContext(w.ctx, klog.Background()))
	guard := informertransform.NewGuard(informertransform.NewPodSharer().Transform)
	f := informers.NewSharedInformerFactoryWithOptions(w.kc, 0, informers.WithTransform(guard.Transform))
	af := accordinformers.NewSharedInformerFactory(w.ac, 0)
	d, err := fwruntime.New(ctx, p, fwruntime.Options{
		Client: w.kc, InformerFactory: f, AccordInformerFactory: af, AccordClient: w.ac, Registry: reg,
		Metrics: metrics.New(), Now: w.now, EvictionsInBackground: w.cfg.Background, Observer: w.observeEviction,
	})
	if err != nil {
		cancel()
		return err
	}
	f.Start(ctx.Done())
	af.Start(ctx.Done())
	synctest.Wait()
	if !d.HasSynced() {
		cancel()
		return fmt.Errorf("descheduler caches not synced")
	}
	if err := d.StartMetrics(ctx); err != nil {
		cancel()
		return err
	}
	// What runner.Run does after Start (pkg/descheduler/runner), on the fake clock.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); d.WatchWindows(ctx) }()
	waitControllers := d.StartControllers(ctx)
	newWindow := func() {
		w.mu.Lock()
		w.limitWin++
		w.mu.Unlock()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if w.cfg.EventOnly {
			// --descheduling-interval=0 with the controllers: one cycle, then limit windows.
			go func() {
				for {
					newWindow()
					d.Limiter().Reset()
					select {
					case <-ctx.Done():
						return
					case <-time.After(runner.DefaultLimitWindow):
					}
				}
			}()
			newWindow()
			w.onCycle()
			d.RunCycle(ctx)
			<-ctx.Done()
			return
		}
		for {
			newWindow()
			w.onCycle()
			d.RunCycle(ctx)
			select {
			case <-ctx.Done():
				return
			case <-time.After(cycleInterval):
			}
		}
	}()
	w.d = &instance{d: d, guard: guard, stop: func() {
		cancel()
		waitControllers()
		wg.Wait()
		f.Shutdown()
		af.Shutdown()
		if err := d.Close(); err != nil {
			w.fail("closing the descheduler: %v", err)
		}
	}}
	synctest.Wait()
	return nil
}

// restart kills the descheduler and starts a new one over the same cluster (a crash, an OOM kill):
// what the dying process would still send (the reservation it deletes when its wait is cut short,
// an eviction, an annotation) never arrives. A leader change stops it cleanly instead.
func (w *world) restart() error {
	w.mu.Lock()
	w.killed = true
	w.mu.Unlock()
	w.stopDescheduler()
	w.mu.Lock()
	w.killed = false
	w.mu.Unlock()
	return w.startDescheduler()
}

// dead is the error of a request a killed process never sent, when w.killed.
func (w *world) dead() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.killed {
		return fmt.Errorf("dial tcp: connection refused (the process was killed)")
	}
	return nil
}

func (w *world) stopDescheduler() {
	if w.d == nil {
		return
	}
	w.d.stop()
	if written := w.d.guard.Written(); len(written) > 0 {
		w.fail("invariant shared-cache: informer objects written to: %v", written)
	}
	w.d = nil
	synctest.Wait()
}

func (w *world) close() {
	w.stopDescheduler()
	w.stopPlacer()
	if w.schedStop != nil {
		w.schedStop()
	}
	w.cancel()
	// Some goroutines of client-go and kube-scheduler end at their next tick after their context
	// is done (metrics recorders, the workqueue's clock): the bubble waits for them.
	time.Sleep(10 * time.Minute)
	synctest.Wait()
}
