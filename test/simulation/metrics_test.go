package simulation

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"

	"github.com/accord-sched/accord/apis/config"
	"github.com/accord-sched/accord/apis/descheduler"
	mrv1alpha1 "github.com/accord-sched/accord/apis/metricsreporter/v1alpha1"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	"github.com/accord-sched/accord/pkg/descheduler/evictions"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/lownodeload"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
	"github.com/accord-sched/accord/pkg/descheduler/simulator"
	sloapply "github.com/accord-sched/accord/pkg/generated/applyconfiguration/slo/v1alpha1"
	slolisters "github.com/accord-sched/accord/pkg/generated/listers/slo/v1alpha1"
	"github.com/accord-sched/accord/pkg/metricsource"
	"github.com/accord-sched/accord/pkg/metricsreporter"
	"github.com/accord-sched/accord/pkg/scheduler/plugins/loadaware"
)

// NodeMetric reports and LowNodeLoad (issue #35): accord-metrics-reporter's real Reporter reports
// every node's usage on a period (its Sample and Round, driven at the simulation's clock stops),
// through a Writer that plays the apiserver's server-side apply of the status; the source (the
// cluster's metrics-server) is the simulation's: a node uses a baseline plus what its pods use.
// The actions turn nodes hot and cool and hold the reporter's writes (a late report, still fresh
// when it lands; a stale one, older than nodeMetricExpirationSeconds when it lands) or stop the
// reporter for a while (missing reports). The descheduler's policy gets a second profile, "load",
// with LowNodeLoad as its balance plugin, loaded as the binary loads it with
// --scheduler-config-file (runner.LoadPolicy: its thresholds, expiry and estimate follow
// accord-scheduler's LoadAware args in manifests/scheduler/config.yaml, which the placement oracle
// runs).

// Metrics is the drawn part of a run's configuration about measured usage.
type Metrics struct {
	// Consecutive is LowNodeLoad's consecutiveAbnormalities.
	Consecutive int32
	// PodCPU is, per workload, what each of its pods uses, in millicores (each requests 100m:
	// the usage estimate counts 85m).
	PodCPU []int64
	// Hot, when 0 or more, makes node0 hot from the start (its baseline hotCPU[Hot]).
	Hot int
}

func (m *Metrics) String() string {
	return fmt.Sprintf("metrics: consecutiveAbnormalities=%d podCPU=%v hot=%d", m.Consecutive, m.PodCPU, m.Hot)
}

const (
	// reportInterval is the reporter's sampling period and report interval (its default report
	// interval; a sample per report).
	reportInterval = 60 * time.Second
	// baseCPU is what a node uses besides its pods, in millicores (12.6% of its 8 CPUs). The odd
	// 7 keeps a node's usage off the 80% threshold's exact value.
	baseCPU    int64 = 1007
	baseMemory int64 = 4 << 30
	podMemory  int64 = 128 << 20
	// verdictMargin: a node within this many percentage points of the threshold is neither
	// judged hot nor cool by the oracle (float rounding of the two computations).
	verdictMargin = 0.1
)

// hotCPU are the baselines of a hot node: 60%, 70%, 75% and 85% of its CPU before its pods.
var hotCPU = []int64{4807, 5607, 6007, 6807}

var nmGVR = slov1alpha1.SchemeGroupVersion.WithResource("nodemetrics")

func drawMetrics(t *rapid.T, workloads int) *Metrics {
	if !rapid.Bool().Draw(t, "metrics") {
		return nil
	}
	m := &Metrics{Consecutive: int32(rapid.IntRange(1, 3).Draw(t, "consecutiveAbnormalities")),
		Hot: rapid.IntRange(-1, len(hotCPU)-1).Draw(t, "node0Hot")}
	for range workloads {
		m.PodCPU = append(m.PodCPU, rapid.SampledFrom([]int64{50, 200, 400, 800}).Draw(t, "podCPU"))
	}
	return m
}

// drawMetricAction draws the arguments of a hot, cool or reporter action.
func drawMetricAction(t *rapid.T, a Action) Action {
	switch a.Kind {
	case "hot":
		a.I = rapid.IntRange(0, 7).Draw(t, "node")
		a.N = rapid.IntRange(0, len(hotCPU)-1).Draw(t, "level")
	case "cool":
		a.I = rapid.IntRange(0, 7).Draw(t, "node")
	case "reporter":
		a.N = rapid.IntRange(0, 2).Draw(t, "fault")
		switch a.N {
		case 0: // down: missing reports, stale after 3 minutes
			a.D = time.Duration(rapid.IntRange(1, 6).Draw(t, "downMinutes")) * time.Minute
		case 1: // late: the writes land 20-110 s late, still fresh
			a.D = time.Duration(rapid.IntRange(20, 110).Draw(t, "lateSeconds")) * time.Second
		default: // stale: they land older than the expiry
			a.D = time.Duration(rapid.IntRange(200, 400).Draw(t, "staleSeconds")) * time.Second
		}
	}
	return a
}

func metricActionString(a Action) string {
	switch a.Kind {
	case "hot":
		return fmt.Sprintf("hot node%d %d%%", a.I, hotCPU[a.N%len(hotCPU)]*100/8000)
	case "cool":
		return fmt.Sprintf("cool node%d", a.I)
	}
	return fmt.Sprintf("reporter %s %s", []string{"down", "late", "stale"}[a.N%3], a.D)
}

// loadArgs are accord-scheduler's LoadAware args (manifests/scheduler/config.yaml), defaulted:
// the oracle judges with them, and LowNodeLoad follows them.
type loadArgs struct {
	cpuThreshold float64
	expiry       time.Duration
	cpuFactor    float64
	force        time.Duration
}

func schedulerLoadArgs() (loadArgs, error) {
	cfg, err := simulator.LoadConfig(schedulerConfig())
	if err != nil {
		return loadArgs{}, err
	}
	for _, prof := range cfg.Profiles {
		if prof.SchedulerName != schedulerName {
			continue
		}
		for _, pc := range prof.PluginConfig {
			a, ok := pc.Args.(*config.LoadAwareArgs)
			if pc.Name != loadaware.Name || !ok {
				continue
			}
			a = a.DeepCopy()
			a.UsageEstimateArgs.SetDefaults()
			return loadArgs{
				cpuThreshold: float64(a.UsageThresholds[corev1.ResourceCPU]),
				expiry:       time.Duration(a.Expiration()) * time.Second,
				cpuFactor:    float64(a.EstimatedScalingFactors[corev1.ResourceCPU]),
				force:        time.Duration(a.SecondsAfterScheduled()) * time.Second,
			}, nil
		}
	}
	return loadArgs{}, fmt.Errorf("%s: no LoadAware args in profile %s", schedulerConfig(), schedulerName)
}

// metricsWorld is the reporter's side of a run and the oracle's records.
type metricsWorld struct {
	args loadArgs

	mu       sync.Mutex
	reporter *metricsreporter.Reporter
	// nodeIdx and nmIdx back the reporter's listers (its informers in the binary), refreshed
	// from the fake apiserver before each round.
	nodeIdx, nmIdx cache.Indexer
	// downUntil: the reporter is down until then (reporter nil).
	downUntil  time.Time
	nextSample time.Time
	// holdFor, when set, holds the next round's writes that long (a late or stale report);
	// held are the writes held until heldUntil. While writes are held no round runs (the
	// reporter's round waits for its writes).
	holdFor   time.Duration
	held      []*sloapply.NodeMetricApplyConfiguration
	heldUntil time.Time
	baseline  map[string]int64
	// samples: per node, the source's cpu readings by time (Unix nanoseconds).
	samples map[string]map[int64]int64
	// landed: per node, the reports written (their updateTime and when they landed).
	landed map[string][]landedReport
	// overReported: per node, whether its last report was over the cpu threshold.
	overReported map[string]bool

	// seq orders the landings and the cycles.
	seq int
	// The oracle's records of the current descheduler instance's cycles.
	gen    int
	cycles []*cycleRecord
	streak map[string]int
}

// landedReport is a report written: its updateTime, and seq, its place among the landings and the
// cycles (a cycle and a landing at one instant of the fake clock are ordered by seq).
type landedReport struct {
	updated time.Time
	seq     int
}

// verdict is the oracle's judgement of a node at a cycle: LoadAware's Filter rule, written out
// here (the README's formula) rather than called.
type verdict struct {
	fresh bool
	// usage is the node's estimated cpu use in millicores, pct in percent of its allocatable.
	usage, alloc, pct float64
	hot, borderline   bool
	// streak is the number of cycles in a row, this one included, the node was fresh and hot (or
	// borderline).
	streak int
	// podCPU: the report's podsUsage cpu, by namespace/name.
	podCPU map[string]float64
}

type cycleRecord struct {
	at  time.Time
	seq int
	v   map[string]verdict
	// balance are the verdicts as LowNodeLoad's Balance starts (after the fit profile's evictions
	// of the cycle): computed at its first call to the evictor.
	balance map[string]verdict
	// evicted: per node, the usage LowNodeLoad's evictions of this cycle took off its projection.
	evicted map[string]float64
}

func (w *world) setupMetrics() error {
	if w.cfg.Metrics == nil {
		return nil
	}
	args, err := schedulerLoadArgs()
	if err != nil {
		return err
	}
	w.m = &metricsWorld{
		args:     args,
		nodeIdx:  cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
		nmIdx:    cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
		baseline: map[string]int64{}, samples: map[string]map[int64]int64{}, landed: map[string][]landedReport{},
		overReported: map[string]bool{}, streak: map[string]int{},
	}
	if h := w.cfg.Metrics.Hot; h >= 0 {
		w.m.baseline[nodeName(0)] = hotCPU[h%len(hotCPU)]
	}
	w.m.reporter = w.newReporter()
	return nil
}

// newReporter is a new accord-metrics-reporter process: what the last one kept in memory (its
// samples, when it last reported each node) is gone.
func (w *world) newReporter() *metricsreporter.Reporter {
	cfg := &mrv1alpha1.MetricsReporterConfiguration{SamplingPeriodSeconds: ptr.To(int64(reportInterval / time.Second)),
		DefaultReportIntervalSeconds: ptr.To(int64(reportInterval / time.Second))}
	mrv1alpha1.SetDefaults_MetricsReporterConfiguration(cfg)
	return metricsreporter.New(metricsreporter.Options{
		Config: cfg, Source: simSource{w}, Writer: simWriter{w},
		Nodes: corelisters.NewNodeLister(w.m.nodeIdx), NodeMetrics: slolisters.NewNodeMetricLister(w.m.nmIdx),
		PodsOnNode: func(node string) ([]*corev1.Pod, error) {
			var out []*corev1.Pod
			for _, p := range w.pods() {
				if p.Spec.NodeName == node {
					out = append(out, p)
				}
			}
			return out, nil
		},
	})
}

func (w *world) podCPU(p *corev1.Pod) int64 {
	return w.cfg.Metrics.PodCPU[mustIndex(workloadOf(p))%len(w.cfg.Metrics.PodCPU)]
}

// simSource is the cluster's metrics-server: a node uses its baseline and what its pods use.
type simSource struct{ w *world }

func (s simSource) Name() string { return "simulation" }

func (s simSource) Usage(context.Context) (metricsource.Usage, error) {
	w, m := s.w, s.w.m
	u := metricsource.Usage{Nodes: map[string]corev1.ResourceList{}, Pods: map[types.NamespacedName]corev1.ResourceList{}}
	pods := w.pods()
	now := time.Now().UnixNano()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, node := range w.nodes {
		cpu, mem := baseCPU, baseMemory
		if b, ok := m.baseline[node]; ok {
			cpu = b
		}
		for _, p := range pods {
			if p.Spec.NodeName != node {
				continue
			}
			c := w.podCPU(p)
			cpu += c
			mem += podMemory
			u.Pods[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = corev1.ResourceList{
				corev1.ResourceCPU: *resource.NewMilliQuantity(c, resource.DecimalSI), corev1.ResourceMemory: *resource.NewQuantity(podMemory, resource.BinarySI)}
		}
		u.Nodes[node] = corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(cpu, resource.DecimalSI), corev1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI)}
		if m.samples[node] == nil {
			m.samples[node] = map[int64]int64{}
		}
		m.samples[node][now] = cpu
	}
	return u, nil
}

// simWriter is the apiserver's side of the reporter's writes: a create, and the server-side apply
// of the status (the reporter is the only owner of the status fields, so its apply replaces them).
type simWriter struct{ w *world }

func (s simWriter) Create(_ context.Context, nm *slov1alpha1.NodeMetric) error {
	nm = nm.DeepCopy()
	nm.UID = types.UID("uid-nm-" + nm.Name)
	nm.CreationTimestamp = metav1.NewTime(time.Now().Truncate(time.Second))
	return s.w.ac.Tracker().Create(nmGVR, nm, "")
}

func (s simWriter) ApplyStatus(_ context.Context, ac *sloapply.NodeMetricApplyConfiguration) error {
	m := s.w.m
	m.mu.Lock()
	if m.holdFor > 0 {
		m.held = append(m.held, ac)
		m.mu.Unlock()
		return nil
	}
	m.mu.Unlock()
	return s.w.applyStatus(ac)
}

// applyStatus writes a report and checks that it is what the source read (invariant
// metric-from-sample: stale, never zero, never made up).
func (w *world) applyStatus(ac *sloapply.NodeMetricApplyConfiguration) error {
	m := w.m
	name := *ac.GetName()
	obj, err := w.ac.Tracker().Get(nmGVR, "", name)
	if err != nil {
		return err
	}
	nm := obj.(*slov1alpha1.NodeMetric).DeepCopy()
	data, err := json.Marshal(ac.Status)
	if err != nil {
		return err
	}
	var st slov1alpha1.NodeMetricStatus
	if err := json.Unmarshal(data, &st); err != nil {
		return err
	}
	nm.Status = st
	if st.UpdateTime == nil {
		w.fail("invariant metric-from-sample: the report of %s has no updateTime", name)
		return nil
	}
	cpu := st.NodeUsage.Cpu().MilliValue()
	m.mu.Lock()
	read, ok := m.samples[name][st.UpdateTime.UnixNano()]
	m.mu.Unlock()
	if !ok || read != cpu {
		w.fail("invariant metric-from-sample: the report of %s says %dm cpu at %s; the source read %dm then (read: %t)", name, cpu, st.UpdateTime.Format(time.RFC3339), read, ok)
	}
	if err := w.ac.Tracker().Update(nmGVR, nm, ""); err != nil {
		return err
	}
	over := float64(cpu)*100/8000 > m.args.cpuThreshold
	m.mu.Lock()
	m.seq++
	m.landed[name] = append(m.landed[name], landedReport{updated: st.UpdateTime.Time, seq: m.seq})
	turnedHot := over && !m.overReported[name]
	m.overReported[name] = over
	m.mu.Unlock()
	if turnedHot {
		// A report that turns a node hot takes a place away (no-pod-lost counts it as a change).
		w.mu.Lock()
		w.churn++
		w.mu.Unlock()
	}
	return nil
}

// metricsTick runs at each of the driver's stops, after the cluster settled: the pod garbage
// collector's counterpart for NodeMetrics, held writes landing, and the reporter's sample and round
// once a report interval has passed.
func (w *world) metricsTick() {
	m := w.m
	if m == nil {
		return
	}
	now := time.Now()
	obj, err := w.ac.Tracker().List(nmGVR, slov1alpha1.SchemeGroupVersion.WithKind("NodeMetric"), "")
	if err != nil {
		panic(err)
	}
	for _, nm := range obj.(*slov1alpha1.NodeMetricList).Items {
		if !slices.Contains(w.nodes, nm.Name) {
			// Owned by its Node: the garbage collector deletes it; the reporter's node informer
			// tells it to forget the node.
			if err := w.ac.Tracker().Delete(nmGVR, "", nm.Name); err != nil && !apierrors.IsNotFound(err) {
				panic(err)
			}
			if m.reporter != nil {
				m.reporter.Forget(nm.Name)
			}
		}
	}
	m.mu.Lock()
	held, land := m.held, len(m.held) > 0 && !now.Before(m.heldUntil)
	if land {
		m.held = nil
	}
	m.mu.Unlock()
	if land {
		sort.Slice(held, func(i, j int) bool { return *held[i].GetName() < *held[j].GetName() })
		for _, ac := range held {
			if err := w.applyStatus(ac); err != nil && !apierrors.IsNotFound(err) {
				panic(err)
			}
			age := now.Sub(ac.Status.UpdateTime.Time)
			kind := "late"
			if age > m.args.expiry {
				kind = "stale"
			}
			w.logf("%s-report:%s(%s old)", kind, *ac.GetName(), age)
		}
	}
	if m.reporter == nil {
		if now.Before(m.downUntil) {
			return
		}
		m.reporter = w.newReporter()
		w.logf("reporter-up")
	}
	if now.Before(m.nextSample) {
		return
	}
	m.nextSample = now.Add(reportInterval)
	var nodes, nms []any
	for _, n := range w.nodes {
		if o, err := w.kc.Tracker().Get(nodesGVR, "", n); err == nil {
			nodes = append(nodes, o)
		}
	}
	if obj, err := w.ac.Tracker().List(nmGVR, slov1alpha1.SchemeGroupVersion.WithKind("NodeMetric"), ""); err == nil {
		for i := range obj.(*slov1alpha1.NodeMetricList).Items {
			nms = append(nms, &obj.(*slov1alpha1.NodeMetricList).Items[i])
		}
	}
	if err := m.nodeIdx.Replace(nodes, ""); err != nil {
		panic(err)
	}
	if err := m.nmIdx.Replace(nms, ""); err != nil {
		panic(err)
	}
	if err := m.reporter.Sample(w.ctx); err != nil {
		w.fail("the metrics reporter's sample: %v", err)
		return
	}
	m.mu.Lock()
	blocked := len(m.held) > 0
	m.mu.Unlock()
	if blocked {
		return // its round still waits for its writes
	}
	m.reporter.Round(w.ctx)
	m.mu.Lock()
	if len(m.held) > 0 {
		m.heldUntil = now.Add(m.holdFor)
		m.holdFor = 0
	}
	m.mu.Unlock()
}

// doMetrics runs a hot, cool or reporter action (nothing without Metrics).
func (w *world) doMetrics(a Action) {
	m := w.m
	if m == nil || len(w.nodes) == 0 {
		return
	}
	node := w.nodes[a.I%len(w.nodes)]
	m.mu.Lock()
	defer m.mu.Unlock()
	switch a.Kind {
	case "hot":
		m.baseline[node] = hotCPU[a.N%len(hotCPU)]
	case "cool":
		m.baseline[node] = baseCPU
	case "reporter":
		switch a.N % 3 {
		case 0:
			if m.reporter != nil {
				m.reporter, m.downUntil = nil, time.Now().Add(a.D)
			}
		default:
			m.holdFor = a.D
		}
	}
}

// policyFollowingScheduler loads the policy as accord-descheduler does with
// --scheduler-config-file (the chart passes it): LowNodeLoad's thresholds, expiry and estimate
// are LoadAware's.
func (w *world) policyFollowingScheduler() (*descheduler.DeschedulerPolicy, framework.Registry, error) {
	f, err := os.CreateTemp("", "accord-sim-policy-*.yaml")
	if err != nil {
		return nil, nil, err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(w.policy()); err != nil {
		return nil, nil, err
	}
	if err := f.Close(); err != nil {
		return nil, nil, err
	}
	return runner.LoadPolicy(f.Name(), schedulerConfig())
}

// loadProfile is the policy's LowNodeLoad profile: the fit profile's window, evictor and
// SchedulerSimulation, never Soft.
func (w *world) loadProfile() string {
	if w.cfg.Metrics == nil {
		return ""
	}
	b := "- name: load\n"
	if w.cfg.Window != nil {
		b += fmt.Sprintf("  evictionWindows:\n  - {start: %q, end: %q, timeZone: %s}\n", w.cfg.Window[0], w.cfg.Window[1], w.cfg.Zone)
	}
	// The policy's DefaultEvictor protections are the fit profile's (invariant pods-without-pdb
	// holds for every profile's evictions).
	evictor := "  - name: DefaultEvictor\n"
	if w.cfg.PodsWithoutPDB {
		evictor += "    args: {podProtections: {extraEnabled: [PodsWithoutPDB]}}\n"
	}
	b += fmt.Sprintf("  pluginConfig:\n%s  - name: LowNodeLoad\n    args: {consecutiveAbnormalities: %d}\n", evictor, w.cfg.Metrics.Consecutive)
	if w.cfg.SchedulerSimulation {
		b += fmt.Sprintf("  - name: SchedulerSimulation\n    args: {schedulerConfigFile: %q}\n", schedulerConfig())
	}
	b += "  plugins:\n    balance: {enabled: [LowNodeLoad]}\n"
	if !w.cfg.SchedulerSimulation {
		b += "    preEvictionFilter: {disabled: [SchedulerSimulation]}\n"
	}
	return b
}

// assignedAt is the pod's PodScheduled time.
func assignedAt(p *corev1.Pod) (time.Time, bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}

// judge is the oracle: the node's NodeMetric is fresh (updateTime at most the expiry old), and its
// estimated cpu use (LoadAware's README: the reported usage, plus for each pod on the node the
// report cannot include yet, missing from it or assigned after its window began, its estimate
// less what the report says it uses, if more; less the reported use of each pod no longer on the
// node) over the threshold. Memory stays far under its threshold in the simulation.
func (w *world) judge(node string, pods []*corev1.Pod, now time.Time) verdict {
	v := verdict{podCPU: map[string]float64{}}
	obj, err := w.ac.Tracker().Get(nmGVR, "", node)
	if err != nil {
		return v
	}
	nm := obj.(*slov1alpha1.NodeMetric)
	nobj, err := w.kc.Tracker().Get(nodesGVR, "", node)
	if err != nil || nm.Status.UpdateTime == nil {
		return v
	}
	updated := nm.Status.UpdateTime.Time
	if now.Sub(updated) > w.m.args.expiry {
		return v
	}
	v.fresh = true
	v.alloc = float64(nobj.(*corev1.Node).Status.Allocatable.Cpu().MilliValue())
	v.usage = float64(nm.Status.NodeUsage.Cpu().MilliValue())
	for _, u := range nm.Status.PodsUsage {
		v.podCPU[u.Namespace+"/"+u.Name] = float64(u.Usage.Cpu().MilliValue())
	}
	var window time.Duration
	if s := nm.Spec.ReportIntervalSeconds; s != nil {
		window = time.Duration(*s) * time.Second
	}
	present := map[string]bool{}
	for _, p := range pods {
		if p.Spec.NodeName != node || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		key := p.Namespace + "/" + p.Name
		rep, inReport := v.podCPU[key]
		present[key] = inReport
		recent := !inReport
		if at, ok := assignedAt(p); ok && (at.After(updated.Add(-window)) || now.Sub(at) < w.m.args.force) {
			recent = true
		}
		if recent {
			est := w.m.args.cpuFactor / 100 * float64(max(p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue(), p.Spec.Containers[0].Resources.Limits.Cpu().MilliValue()))
			v.usage += max(est, rep) - rep
		}
	}
	for key, rep := range v.podCPU {
		if !present[key] {
			v.usage -= rep
		}
	}
	v.pct = v.usage * 100 / v.alloc
	v.hot = v.pct > w.m.args.cpuThreshold+verdictMargin
	v.borderline = !v.hot && v.pct > w.m.args.cpuThreshold-verdictMargin
	return v
}

// judgeAll judges every node now.
func (w *world) judgeAll() map[string]verdict {
	now := time.Now()
	pods := w.pods()
	obj, err := w.kc.Tracker().List(nodesGVR, corev1.SchemeGroupVersion.WithKind("Node"), "")
	if err != nil {
		panic(err)
	}
	out := map[string]verdict{}
	for _, n := range obj.(*corev1.NodeList).Items {
		out[n.Name] = w.judge(n.Name, pods, now)
	}
	return out
}

// onCycle records the oracle's verdicts at the start of a descheduling cycle (in the cycle's
// goroutine: the cluster is as the cycle sees it, the driver waits for it).
func (w *world) onCycle() {
	m := w.m
	if m == nil {
		return
	}
	rec := &cycleRecord{at: time.Now(), v: w.judgeAll(), evicted: map[string]float64{}}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gen != w.gen {
		m.gen, m.cycles, m.streak = w.gen, nil, map[string]int{}
	}
	for node, v := range rec.v {
		if v.fresh && (v.hot || v.borderline) {
			m.streak[node]++
		} else {
			delete(m.streak, node)
		}
		v.streak = m.streak[node]
		rec.v[node] = v
	}
	for node := range m.streak {
		if _, ok := rec.v[node]; !ok {
			delete(m.streak, node)
		}
	}
	m.seq++
	rec.seq = m.seq
	m.cycles = append(m.cycles, rec)
}

// observeEviction checks each eviction LowNodeLoad asks for (the runtime's Observer), against the
// verdicts of the cycle that decided it:
//   - lownodeload-fresh-metric: the node's NodeMetric was fresh (not missing, not older than
//     nodeMetricExpirationSeconds);
//   - lownodeload-hot: the node was over LoadAware's threshold by the estimate, after the
//     evictions LowNodeLoad already made from it in this cycle (their usage taken off as the
//     plugin projects it), and had been for consecutiveAbnormalities cycles in a row;
//   - evicted-twice: a pod placed on a node that was not hot at the descheduler's last cycle
//     before it is evicted only after consecutiveAbnormalities-1 fresh reports of the node taken
//     after its placement have landed (README: why this N).
func (w *world) observeEviction(r evictions.Record) {
	m := w.m
	if m == nil || r.Plugin != lownodeload.Name || r.Pod == nil {
		return
	}
	node := r.Pod.Spec.NodeName
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.cycles) == 0 || m.gen != w.gen {
		w.fail("LowNodeLoad evicted %s with no cycle recorded", r.Pod.Name)
		return
	}
	rec := m.cycles[len(m.cycles)-1]
	if rec.balance == nil {
		// The evictor's first word from LowNodeLoad in this cycle comes before its first
		// eviction: the cluster is as Balance found it.
		rec.balance = w.judgeAll()
	}
	if r.Stage != evictions.StageEvict {
		return
	}
	v := rec.balance[node]
	v.streak = rec.v[node].streak
	c := int(w.cfg.Metrics.Consecutive)
	switch {
	case !v.fresh:
		w.fail("invariant lownodeload-fresh-metric: LowNodeLoad evicted %s from %s, whose NodeMetric was missing or older than %s at the cycle (%s)",
			r.Pod.Name, node, m.args.expiry, rec.at.Sub(w.epoch))
		return
	case v.streak < c:
		w.fail("invariant lownodeload-hot: LowNodeLoad evicted %s from %s, hot (fresh, over %.0f%% by the estimate) for %d cycles in a row; consecutiveAbnormalities is %d",
			r.Pod.Name, node, m.args.cpuThreshold, v.streak, c)
		return
	}
	projected := (v.usage - rec.evicted[node]) * 100 / v.alloc
	if projected <= m.args.cpuThreshold-verdictMargin {
		w.fail("invariant lownodeload-hot: LowNodeLoad evicted %s from %s, whose estimated cpu use is %.2f%% (%.2f%% less %.0fm of pods already evicted in the cycle), not over the %.0f%% threshold",
			r.Pod.Name, node, projected, v.pct, rec.evicted[node], m.args.cpuThreshold)
		return
	}
	if tp, ok := assignedAt(r.Pod); ok {
		exempt := false
		for i := len(m.cycles) - 1; i >= 0; i-- {
			if !m.cycles[i].at.After(tp) {
				pv := m.cycles[i].v[node]
				exempt = pv.fresh && (pv.hot || pv.borderline)
				break
			}
		}
		n := 0
		for _, l := range m.landed[node] {
			if l.updated.After(tp) && l.seq < rec.seq {
				n++
			}
		}
		if !exempt && n < c-1 {
			w.fail("invariant evicted-twice: LowNodeLoad evicted %s from %s after %d fresh reports of the node since its placement %s earlier; consecutiveAbnormalities %d promises %d",
				r.Pod.Name, node, n, rec.at.Sub(tp), c, c-1)
			return
		}
	}
	if r.Err == nil || framework.IsPodGone(r.Err) {
		use, ok := v.podCPU[r.Pod.Namespace+"/"+r.Pod.Name]
		if !ok {
			use = float64(r.Pod.Spec.Containers[0].Resources.Requests.Cpu().MilliValue())
		}
		rec.evicted[node] += use
		w.logf("lownodeload:%s@%s(%.1f%%)", r.Pod.Name, node, projected)
	}
}

// metricFaults heat node0 and node1 and put each reporter fault in the way of LowNodeLoad's cycles.
func metricFaults() []Action {
	return []Action{{Kind: "hot", I: 0, N: 2}, {Kind: "hot", I: 1, N: 1}, advance(11 * time.Minute),
		{Kind: "reporter", N: 1, D: 100 * time.Second}, advance(6 * time.Minute), {Kind: "cool", I: 1},
		{Kind: "reporter", N: 0, D: 4 * time.Minute}, advance(8 * time.Minute),
		{Kind: "reporter", N: 2, D: 300 * time.Second}, advance(12 * time.Minute)}
}

// lowNodeLoadEvictions counts the evictions LowNodeLoad made in a run (its trace's lownodeload:
// entries).
func lowNodeLoadEvictions(r Result) int {
	n := 0
	for _, line := range r.Trace {
		n += strings.Count(line, "lownodeload:")
	}
	return n
}

// metricScenarios are the NodeMetric cases kept as regression tests: each fails with the bug its
// comment names put back (README, "What it found").
var metricScenarios = []scenario{{
	// node0 turns hot (85% before its pods): after consecutiveAbnormalities cycles on fresh
	// reports, LowNodeLoad drains it onto the cool nodes.
	name: "lownodeload-drains-a-hot-node",
	cfg: Config{Zone: "Europe/Berlin", Start: berlin, Nodes: 3,
		Workloads: []Workload{{Replicas: 6, Namespace: "ns-a"}, {Replicas: 4, Namespace: "ns-b"}},
		Metrics:   &Metrics{Consecutive: 3, PodCPU: []int64{400, 200}, Hot: -1}},
	actions: []Action{{Kind: "hot", I: 0, N: 3}, advance(30 * time.Minute)},
	check: func(t *testing.T, r Result, _ summary) {
		if lowNodeLoadEvictions(r) == 0 {
			t.Errorf("LowNodeLoad evicted nothing from the hot node")
		}
	},
}, {
	// node0 is reported hot once, then the reporter is down: from the next cycle on its metric is
	// older than nodeMetricExpirationSeconds, and LowNodeLoad must not count it (invariant
	// lownodeload-fresh-metric; the bug: LowNodeLoad ignoring the expiry).
	name: "lownodeload-holds-on-a-missing-report",
	cfg: Config{Zone: "Europe/Berlin", Start: berlin, Nodes: 3,
		Workloads: []Workload{{Replicas: 6, Namespace: "ns-a"}, {Replicas: 4, Namespace: "ns-b"}},
		Metrics:   &Metrics{Consecutive: 2, PodCPU: []int64{400, 200}, Hot: -1}},
	actions: []Action{{Kind: "hot", I: 0, N: 3}, advance(time.Minute), {Kind: "reporter", N: 0, D: 30 * time.Minute}, advance(25 * time.Minute)},
	check: func(t *testing.T, r Result, _ summary) {
		if n := lowNodeLoadEvictions(r); n != 0 {
			t.Errorf("LowNodeLoad evicted %d pods on a missing report", n)
		}
	},
}, {
	// ... and the same with the reporter's write held 5 minutes: the report lands stale.
	name: "lownodeload-holds-on-a-stale-report",
	cfg: Config{Zone: "Europe/Berlin", Start: berlin, Nodes: 3,
		Workloads: []Workload{{Replicas: 6, Namespace: "ns-a"}, {Replicas: 4, Namespace: "ns-b"}},
		Metrics:   &Metrics{Consecutive: 1, PodCPU: []int64{400, 200}, Hot: -1}},
	actions: []Action{{Kind: "hot", I: 0, N: 3}, advance(time.Minute), {Kind: "reporter", N: 2, D: 300 * time.Second}, advance(5 * time.Minute)},
	check: func(t *testing.T, r Result, _ summary) {
		if n := lowNodeLoadEvictions(r); n != 0 {
			t.Errorf("LowNodeLoad evicted %d pods on a stale report", n)
		}
	},
}, {
	// node0 (w0-1, w0-2 at 800m, w1-7, w1-10 at 50m) turns hot at 81%; a minute before the next
	// cycle w0-1 is deleted (30 s grace) after the minute's report. The cycle judges on that
	// report, which still counts w0-1: by the estimate (a pod gone or terminating no longer counts)
	// node0 is at 71%, under the threshold, and LowNodeLoad must not evict (invariant
	// lownodeload-hot; the bug: LowNodeLoad without the usage estimate).
	name: "lownodeload-counts-a-deleted-pod-gone",
	cfg: Config{Zone: "Europe/Berlin", Start: berlin, Nodes: 3,
		Workloads: []Workload{{Replicas: 6, Namespace: "ns-a"}, {Replicas: 4, Namespace: "ns-b"}},
		Metrics:   &Metrics{Consecutive: 1, PodCPU: []int64{800, 50}, Hot: -1}},
	actions: []Action{{Kind: "hot", I: 0, N: 0}, advance(4 * time.Minute), {Kind: "deletePod", I: 0, N: 0, D: 30 * time.Second}, advance(2 * time.Minute)},
	check: func(t *testing.T, r Result, _ summary) {
		if n := lowNodeLoadEvictions(r); n != 0 {
			t.Errorf("LowNodeLoad evicted %d pods from a node under its threshold by the estimate", n)
		}
	},
}}

// TestMetricScenarios runs each NodeMetric scenario; its invariants must hold.
func TestMetricScenarios(t *testing.T) {
	for _, sc := range metricScenarios {
		t.Run(sc.name, func(t *testing.T) {
			r := Run(t, sc.cfg, sc.actions)
			if r.Err != nil || testing.Verbose() {
				for _, line := range r.Trace {
					t.Log(line)
				}
			}
			if r.Err != nil {
				t.Fatalf("%v\n(%s)", r.Err, r.Summary)
			}
			if sc.check != nil {
				sc.check(t, r, r.counts)
			}
		})
	}
}
