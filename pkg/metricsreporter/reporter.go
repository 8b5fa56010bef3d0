package metricsreporter

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/accord-sched/accord/apis/metricsreporter/v1alpha1"
	"github.com/accord-sched/accord/apis/metricsreporter/validation"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	sloapply "github.com/accord-sched/accord/pkg/generated/applyconfiguration/slo/v1alpha1"
	accordclient "github.com/accord-sched/accord/pkg/generated/clientset/versioned"
	slolisters "github.com/accord-sched/accord/pkg/generated/listers/slo/v1alpha1"
	"github.com/accord-sched/accord/pkg/metricsource"
)

// FieldManager owns the status fields the reporter applies.
const FieldManager = "accord-metrics-reporter"

// Writer writes NodeMetrics. ClientWriter writes through the apiserver; benchmarks count.
type Writer interface {
	Create(ctx context.Context, nm *slov1alpha1.NodeMetric) error
	ApplyStatus(ctx context.Context, nm *sloapply.NodeMetricApplyConfiguration) error
}

// ClientWriter writes with Accord's clientset: a create, and a server-side apply of the status
// subresource with FieldManager (forced: the reporter is the only owner of the usage).
type ClientWriter struct{ Client accordclient.Interface }

// Create creates nm.
func (w ClientWriter) Create(ctx context.Context, nm *slov1alpha1.NodeMetric) error {
	_, err := w.Client.SloV1alpha1().NodeMetrics().Create(ctx, nm, metav1.CreateOptions{FieldManager: FieldManager})
	return err
}

// ApplyStatus applies nm's status.
func (w ClientWriter) ApplyStatus(ctx context.Context, nm *sloapply.NodeMetricApplyConfiguration) error {
	_, err := w.Client.SloV1alpha1().NodeMetrics().ApplyStatus(ctx, nm, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	return err
}

// PodsOnNode returns the pods bound to a node (an informer index on spec.nodeName).
type PodsOnNode func(node string) ([]*corev1.Pod, error)

// Reporter samples a UsageSource every sampling period and, every report interval of each node,
// writes the node's NodeMetric status from the samples of that interval.
type Reporter struct {
	cfg         *v1alpha1.MetricsReporterConfiguration
	source      metricsource.UsageSource
	writer      Writer
	nodes       corelisters.NodeLister
	nodeMetrics slolisters.NodeMetricLister
	podsOnNode  PodsOnNode
	metrics     *Metrics
	clock       clock.Clock
	percentile  int

	mu         sync.Mutex
	nodeSeries map[string][]point
	podSeries  map[types.NamespacedName][]point
	reported   map[string]report // per node: the newest sample time written and when
	created    map[string]bool   // NodeMetrics created but maybe not yet in the lister
	retention  time.Duration
}

type point struct {
	t           time.Time
	cpu, memory int64 // millicores, bytes
}

type report struct {
	sample, at time.Time
}

// Options are a Reporter's parts.
type Options struct {
	Config      *v1alpha1.MetricsReporterConfiguration
	Source      metricsource.UsageSource
	Writer      Writer
	Nodes       corelisters.NodeLister
	NodeMetrics slolisters.NodeMetricLister
	PodsOnNode  PodsOnNode
	Metrics     *Metrics
	Clock       clock.Clock
}

// New returns a reporter; Config must be defaulted and valid.
func New(o Options) *Reporter {
	if o.Metrics == nil {
		o.Metrics = NewMetrics()
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	p, _ := validation.Percentile(o.Config.Statistic)
	// The source's series start at 0, so that an alert's rate sees the first failure.
	o.Metrics.SourceErrors.WithLabelValues(o.Source.Name())
	o.Metrics.NodesSkipped.WithLabelValues(o.Source.Name())
	return &Reporter{
		cfg: o.Config, source: o.Source, writer: o.Writer, nodes: o.Nodes, nodeMetrics: o.NodeMetrics,
		podsOnNode: o.PodsOnNode, metrics: o.Metrics, clock: o.Clock, percentile: p,
		nodeSeries: map[string][]point{}, podSeries: map[types.NamespacedName][]point{},
		reported: map[string]report{}, created: map[string]bool{},
		retention: time.Duration(*o.Config.DefaultReportIntervalSeconds) * time.Second,
	}
}

func (r *Reporter) samplingPeriod() time.Duration {
	return time.Duration(*r.cfg.SamplingPeriodSeconds) * time.Second
}

// Run samples and reports until ctx ends. A failed reading is logged with the source, counted and
// retried with exponential backoff (from 1 s, capped at the sampling period).
func (r *Reporter) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("source", r.source.Name())
	logger.Info("Starting the metrics reporter", "samplingPeriod", r.samplingPeriod(), "statistic", r.cfg.Statistic)
	period := r.samplingPeriod()
	// A round's writes are rate-limited by the client (5000 nodes at 100 QPS take 50 s): rounds run
	// beside the sampling, one at a time, so that samples keep their period.
	var rounds sync.WaitGroup
	defer rounds.Wait()
	var inRound atomic.Bool
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Cap: period, Steps: math.MaxInt32}
	for {
		delay := period
		if err := r.Sample(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			delay = min(backoff.Step(), period)
			logger.Error(err, "Reading usage failed; NodeMetrics are not updated until it succeeds", "retryIn", delay)
		} else {
			backoff = wait.Backoff{Duration: time.Second, Factor: 2, Cap: period, Steps: math.MaxInt32}
			if inRound.CompareAndSwap(false, true) {
				rounds.Add(1)
				go func() {
					defer rounds.Done()
					defer inRound.Store(false)
					r.Round(ctx)
				}()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-r.clock.After(delay):
		}
	}
}

// Sample reads the source once and keeps the reading.
func (r *Reporter) Sample(ctx context.Context) error {
	u, err := r.source.Usage(ctx)
	if err != nil {
		r.metrics.SourceErrors.WithLabelValues(r.source.Name()).Inc()
		return fmt.Errorf("source %s: %w", r.source.Name(), err)
	}
	now := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for n, rl := range u.Nodes {
		if p, ok := toPoint(now, rl); ok {
			r.nodeSeries[n] = append(r.nodeSeries[n], p)
		}
	}
	for k, rl := range u.Pods {
		if p, ok := toPoint(now, rl); ok {
			r.podSeries[k] = append(r.podSeries[k], p)
		}
	}
	cutoff := now.Add(-r.retention)
	pruneAll(r.nodeSeries, cutoff)
	pruneAll(r.podSeries, cutoff)
	return nil
}

// toPoint keeps a reading with both cpu and memory; a partial one is dropped (never a zero).
func toPoint(t time.Time, rl corev1.ResourceList) (point, bool) {
	cpu, ok1 := rl[corev1.ResourceCPU]
	mem, ok2 := rl[corev1.ResourceMemory]
	if !ok1 || !ok2 {
		return point{}, false
	}
	return point{t: t, cpu: cpu.MilliValue(), memory: mem.Value()}, true
}

func pruneAll[K comparable](m map[K][]point, cutoff time.Time) {
	for k, s := range m {
		i := 0
		for i < len(s) && !s[i].t.After(cutoff) {
			i++
		}
		switch {
		case i == len(s):
			delete(m, k)
		case i > 0:
			m[k] = slices.Clone(s[i:])
		}
	}
}

type job struct {
	node   *corev1.Node
	create bool
	status *sloapply.NodeMetricStatusApplyConfiguration
	sample time.Time
}

// Round writes the NodeMetric of every node whose report interval has passed since its last
// report and that has a sample newer than the last one written; creates the missing NodeMetrics.
// A node without a new sample is skipped (its NodeMetric goes stale), never written as zero.
func (r *Reporter) Round(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("source", r.source.Name())
	start := r.clock.Now()
	defer func() { r.metrics.RoundDuration.Observe(r.clock.Since(start).Seconds()) }()
	nodes, err := r.nodes.List(labels.Everything())
	if err != nil {
		logger.Error(err, "Listing nodes")
		return
	}
	now := r.clock.Now()
	var jobs []job
	maxInterval := time.Duration(*r.cfg.DefaultReportIntervalSeconds) * time.Second
	r.mu.Lock()
	for _, node := range nodes {
		interval := time.Duration(*r.cfg.DefaultReportIntervalSeconds) * time.Second
		nm, err := r.nodeMetrics.Get(node.Name)
		exists := err == nil
		if exists {
			delete(r.created, node.Name) // a later absence is a deletion: create it again
		}
		if exists && nm.Spec.ReportIntervalSeconds != nil && *nm.Spec.ReportIntervalSeconds > 0 {
			interval = time.Duration(*nm.Spec.ReportIntervalSeconds) * time.Second
		}
		maxInterval = max(maxInterval, interval)
		j := job{node: node, create: !exists && !r.created[node.Name]}
		last := r.reported[node.Name]
		// Due a little early so that a round landing just before the interval does not wait a
		// whole sampling period more.
		if !last.at.IsZero() && now.Sub(last.at) < interval-r.samplingPeriod()/2 {
			if j.create {
				jobs = append(jobs, j)
			}
			continue
		}
		series := window(r.nodeSeries[node.Name], now.Add(-interval))
		if len(series) == 0 || !series[len(series)-1].t.After(last.sample) {
			r.metrics.NodesSkipped.WithLabelValues(r.source.Name()).Inc()
			logger.V(2).Info("No new usage for node; its NodeMetric is not updated", "node", node.Name)
			if j.create {
				jobs = append(jobs, j)
			}
			continue
		}
		j.sample = series[len(series)-1].t
		j.status = r.statusLocked(node.Name, series, now.Add(-interval), logger)
		jobs = append(jobs, j)
	}
	r.retention = maxInterval
	r.mu.Unlock()
	r.write(ctx, jobs, now)
}

func window(s []point, after time.Time) []point {
	i := 0
	for i < len(s) && !s[i].t.After(after) {
		i++
	}
	return s[i:]
}

func (r *Reporter) statusLocked(node string, series []point, after time.Time, logger klog.Logger) *sloapply.NodeMetricStatusApplyConfiguration {
	st := sloapply.NodeMetricStatus().
		WithUpdateTime(metav1.NewTime(series[len(series)-1].t)).
		WithNodeUsage(r.resources(series))
	pods, err := r.podsOnNode(node)
	if err != nil {
		logger.Error(err, "Listing the pods of node", "node", node)
	}
	slices.SortFunc(pods, func(a, b *corev1.Pod) int {
		if a.Namespace != b.Namespace {
			if a.Namespace < b.Namespace {
				return -1
			}
			return 1
		}
		if a.Name < b.Name {
			return -1
		} else if a.Name > b.Name {
			return 1
		}
		return 0
	})
	st.PodsUsage = make([]sloapply.PodUsageApplyConfiguration, 0, len(pods))
	for _, p := range pods {
		ps := window(r.podSeries[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}], after)
		if len(ps) == 0 {
			continue // a pod the source does not report is left out, not reported idle
		}
		st.PodsUsage = append(st.PodsUsage, *sloapply.PodUsage().WithNamespace(p.Namespace).WithName(p.Name).WithUsage(r.resources(ps)))
	}
	return st
}

func (r *Reporter) resources(s []point) corev1.ResourceList {
	cpu := make([]int64, len(s))
	mem := make([]int64, len(s))
	for i, p := range s {
		cpu[i], mem[i] = p.cpu, p.memory
	}
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(r.statistic(cpu), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(r.statistic(mem), resource.BinarySI),
	}
}

// statistic computes the configured statistic of v (in sample order; v is reordered).
func (r *Reporter) statistic(v []int64) int64 {
	switch {
	case r.cfg.Statistic == "last":
		return v[len(v)-1]
	case r.percentile > 0:
		slices.Sort(v)
		rank := int(math.Ceil(float64(r.percentile) / 100 * float64(len(v))))
		return v[max(rank, 1)-1]
	default: // mean
		var sum float64
		for _, x := range v {
			sum += float64(x)
		}
		return int64(math.Round(sum / float64(len(v))))
	}
}

// write runs the round's writes, at most MaxConcurrentWrites at once (the client's QPS limits
// their rate).
func (r *Reporter) write(ctx context.Context, jobs []job, now time.Time) {
	logger := klog.FromContext(ctx)
	work := make(chan job)
	var wg sync.WaitGroup
	for range min(int(*r.cfg.MaxConcurrentWrites), max(len(jobs), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				r.do(ctx, logger, j, now)
			}
		}()
	}
	for _, j := range jobs {
		select {
		case work <- j:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(work)
	wg.Wait()
}

func (r *Reporter) do(ctx context.Context, logger klog.Logger, j job, now time.Time) {
	name := j.node.Name
	if j.create {
		nm := &slov1alpha1.NodeMetric{
			ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: name, UID: j.node.UID,
			}}},
			Spec: slov1alpha1.NodeMetricSpec{ReportIntervalSeconds: ptr.To(*r.cfg.DefaultReportIntervalSeconds)},
		}
		err := r.writer.Create(ctx, nm)
		if err != nil && !apierrors.IsAlreadyExists(err) {
			r.metrics.Writes.WithLabelValues("create", "error").Inc()
			logger.Error(err, "Creating the NodeMetric", "node", name)
			return
		}
		r.metrics.Writes.WithLabelValues("create", "success").Inc()
		r.mu.Lock()
		r.created[name] = true
		r.mu.Unlock()
	}
	if j.status == nil {
		return
	}
	err := r.writer.ApplyStatus(ctx, sloapply.NodeMetric(name).WithStatus(j.status))
	if err != nil {
		r.metrics.Writes.WithLabelValues("apply-status", "error").Inc()
		logger.Error(err, "Writing the NodeMetric status; retried next round", "node", name)
		return
	}
	r.metrics.Writes.WithLabelValues("apply-status", "success").Inc()
	if j.status.UpdateTime != nil {
		r.metrics.UpdateTime.WithLabelValues(name).Set(float64(j.status.UpdateTime.Unix()))
	}
	r.mu.Lock()
	r.reported[name] = report{sample: j.sample, at: now}
	r.mu.Unlock()
}

// Forget drops what the reporter keeps about a deleted node.
func (r *Reporter) Forget(node string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.reported, node)
	delete(r.created, node)
	delete(r.nodeSeries, node)
	r.metrics.UpdateTime.DeleteLabelValues(node)
}
