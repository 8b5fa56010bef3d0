package metricsreporter

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/accord-sched/accord/apis/metricsreporter/v1alpha1"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	sloapply "github.com/accord-sched/accord/pkg/generated/applyconfiguration/slo/v1alpha1"
	slolisters "github.com/accord-sched/accord/pkg/generated/listers/slo/v1alpha1"
	"github.com/accord-sched/accord/pkg/metricsource"
)

// fakeSource returns what the test sets; err makes it fail.
type fakeSource struct {
	mu    sync.Mutex
	usage metricsource.Usage
	err   error
}

func (f *fakeSource) Name() string { return "fake" }
func (f *fakeSource) Usage(context.Context) (metricsource.Usage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.usage, f.err
}

// recordingWriter keeps what would be written and counts requests.
type recordingWriter struct {
	mu       sync.Mutex
	creates  []*slov1alpha1.NodeMetric
	statuses map[string][]*sloapply.NodeMetricStatusApplyConfiguration
	requests int
}

func (w *recordingWriter) Create(_ context.Context, nm *slov1alpha1.NodeMetric) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.requests++
	w.creates = append(w.creates, nm)
	return nil
}

func (w *recordingWriter) ApplyStatus(_ context.Context, nm *sloapply.NodeMetricApplyConfiguration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.requests++
	if w.statuses == nil {
		w.statuses = map[string][]*sloapply.NodeMetricStatusApplyConfiguration{}
	}
	w.statuses[*nm.Name] = append(w.statuses[*nm.Name], nm.Status)
	return nil
}

func rl(cpu, mem string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
}

func config(t testing.TB, statistic string) *v1alpha1.MetricsReporterConfiguration {
	t.Helper()
	c, err := DecodeConfig([]byte("apiVersion: metricsreporter/v1alpha1\nkind: MetricsReporterConfiguration\nsamplingPeriodSeconds: 10\ndefaultReportIntervalSeconds: 60\nstatistic: " + statistic + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type fixture struct {
	r      *Reporter
	src    *fakeSource
	w      *recordingWriter
	clock  *clocktesting.FakeClock
	nodes  cache.Indexer
	nms    cache.Indexer
	pods   cache.Indexer
	metric *Metrics
}

func newFixture(t testing.TB, statistic string, nodeNames ...string) *fixture {
	f := &fixture{
		src: &fakeSource{}, w: &recordingWriter{}, clock: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		nodes: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
		nms:   cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
		pods: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{"node": func(obj any) ([]string, error) {
			return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
		}}),
		metric: NewMetrics(),
	}
	for _, n := range nodeNames {
		if err := f.nodes.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, UID: types.UID("uid-" + n)}}); err != nil {
			t.Fatal(err)
		}
	}
	f.r = New(Options{
		Config: config(t, statistic), Source: f.src, Writer: f.w, Clock: f.clock, Metrics: f.metric,
		Nodes: corelisters.NewNodeLister(f.nodes), NodeMetrics: slolisters.NewNodeMetricLister(f.nms),
		PodsOnNode: func(node string) ([]*corev1.Pod, error) {
			objs, err := f.pods.ByIndex("node", node)
			out := make([]*corev1.Pod, 0, len(objs))
			for _, o := range objs {
				out = append(out, o.(*corev1.Pod))
			}
			return out, err
		},
	})
	return f
}

func (f *fixture) addPod(t testing.TB, ns, name, node string) {
	if err := f.pods.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.PodSpec{NodeName: node}}); err != nil {
		t.Fatal(err)
	}
}

// step samples once, runs a round and advances the clock by the sampling period.
func (f *fixture) step(t testing.TB) error {
	t.Helper()
	err := f.r.Sample(context.Background())
	if err == nil {
		f.r.Round(context.Background())
	}
	f.clock.Step(10 * time.Second)
	return err
}

func usageOf(s *sloapply.NodeMetricStatusApplyConfiguration) (cpu, mem string) {
	c, m := (*s.NodeUsage)[corev1.ResourceCPU], (*s.NodeUsage)[corev1.ResourceMemory]
	return c.String(), m.String()
}

func TestReporterCreatesAndReports(t *testing.T) {
	f := newFixture(t, "mean", "n1")
	f.addPod(t, "ns", "p1", "n1")
	f.addPod(t, "ns", "unmeasured", "n1")
	f.src.usage = metricsource.Usage{
		Nodes: map[string]corev1.ResourceList{"n1": rl("1", "1Gi")},
		Pods:  map[types.NamespacedName]corev1.ResourceList{{Namespace: "ns", Name: "p1"}: rl("500m", "100Mi")},
	}
	if err := f.step(t); err != nil {
		t.Fatal(err)
	}
	if len(f.w.creates) != 1 {
		t.Fatalf("creates = %d, want 1", len(f.w.creates))
	}
	nm := f.w.creates[0]
	if nm.Name != "n1" || len(nm.OwnerReferences) != 1 || nm.OwnerReferences[0].Kind != "Node" || nm.OwnerReferences[0].UID != "uid-n1" {
		t.Fatalf("created %+v, want n1 owned by node n1", nm.ObjectMeta)
	}
	if nm.Spec.ReportIntervalSeconds == nil || *nm.Spec.ReportIntervalSeconds != 60 {
		t.Fatalf("spec.reportIntervalSeconds = %v, want 60", nm.Spec.ReportIntervalSeconds)
	}
	st := f.w.statuses["n1"]
	if len(st) != 1 {
		t.Fatalf("status writes = %d, want 1 (the first sample is reported at once)", len(st))
	}
	if cpu, mem := usageOf(st[0]); cpu != "1" || mem != "1Gi" {
		t.Fatalf("nodeUsage = %s/%s, want 1/1Gi", cpu, mem)
	}
	if len(st[0].PodsUsage) != 1 || *st[0].PodsUsage[0].Name != "p1" {
		t.Fatalf("podsUsage = %+v, want p1 only (a pod the source does not report is left out)", st[0].PodsUsage)
	}
	if !st[0].UpdateTime.Equal(&metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}) {
		t.Fatalf("updateTime = %v", st[0].UpdateTime)
	}
	// Within the interval nothing is written; at 60 s the mean of the samples of the last 60 s.
	f.src.usage.Nodes["n1"] = rl("3", "1Gi")
	for range 5 {
		if err := f.step(t); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.w.statuses["n1"]) != 1 {
		t.Fatalf("status writes = %d within the interval, want 1", len(f.w.statuses["n1"]))
	}
	if err := f.step(t); err != nil { // t = 60 s: samples at 10..60 s, all 3 cores
		t.Fatal(err)
	}
	if st := f.w.statuses["n1"]; len(st) != 2 {
		t.Fatalf("status writes = %d, want 2", len(st))
	} else if cpu, _ := usageOf(st[1]); cpu != "3" {
		t.Fatalf("cpu = %s, want 3", cpu)
	}
}

func TestStatistics(t *testing.T) {
	for _, tc := range []struct {
		statistic string
		want      int64
	}{{"last", 100}, {"mean", 190}, {"p50", 100}, {"p95", 1000}, {"p90", 100}} {
		f := newFixture(t, tc.statistic)
		// Ten samples: nine of 100 and one spike of 1000 in the middle.
		v := []int64{100, 100, 100, 100, 1000, 100, 100, 100, 100, 100}
		if got := f.r.statistic(v); got != tc.want {
			t.Errorf("%s = %d, want %d", tc.statistic, got, tc.want)
		}
	}
}

// TestSourceDownNeverWritesZeros: with the source failing or not reporting a node, no status is
// written for it (it goes stale), the failure is counted, and reports resume when it is back.
func TestSourceDownNeverWritesZeros(t *testing.T) {
	f := newFixture(t, "last", "n1", "n2")
	f.src.usage = metricsource.Usage{Nodes: map[string]corev1.ResourceList{"n1": rl("2", "2Gi"), "n2": rl("1", "1Gi")}}
	if err := f.step(t); err != nil {
		t.Fatal(err)
	}
	// The source goes down for two intervals.
	f.src.err = errors.New("connection refused")
	for range 12 {
		if err := f.step(t); err == nil {
			t.Fatal("Sample succeeded with the source down")
		}
	}
	// Then it is back without n2 (n2's usage partial: memory missing) for 50 s (less than an
	// interval: n1 is written once more, at once).
	f.src.err = nil
	f.src.usage = metricsource.Usage{Nodes: map[string]corev1.ResourceList{"n1": rl("2500m", "2Gi"), "n2": {corev1.ResourceCPU: resource.MustParse("1")}}}
	for range 6 {
		if err := f.step(t); err != nil {
			t.Fatal(err)
		}
	}
	for node, sts := range f.w.statuses {
		for _, st := range sts {
			cpu, mem := (*st.NodeUsage)[corev1.ResourceCPU], (*st.NodeUsage)[corev1.ResourceMemory]
			if cpu.IsZero() || mem.IsZero() {
				t.Fatalf("node %s written with zero usage %s/%s", node, cpu.String(), mem.String())
			}
		}
	}
	if n := len(f.w.statuses["n2"]); n != 1 {
		t.Fatalf("n2 written %d times, want once (before the source went down)", n)
	}
	if n := len(f.w.statuses["n1"]); n != 2 {
		t.Fatalf("n1 written %d times, want twice (before and after the outage)", n)
	}
	if cpu, _ := usageOf(f.w.statuses["n1"][1]); cpu != "2500m" {
		t.Fatalf("n1 after the outage: cpu %s, want 2500m", cpu)
	}
	if v, err := testutil.GetCounterMetricValue(f.metric.SourceErrors.WithLabelValues("fake")); err != nil || v != 12 {
		t.Fatalf("source errors = %v (%v), want 12", v, err)
	}
	if v, err := testutil.GetCounterMetricValue(f.metric.NodesSkipped.WithLabelValues("fake")); err != nil || v == 0 {
		t.Fatalf("nodes skipped = %v (%v), want > 0", v, err)
	}
}

// A new reporter exports its failure counters at 0 before any failure, so that an alert's rate sees
// the first one.
func TestFailureCountersStartAtZero(t *testing.T) {
	f := newFixture(t, "last", "n1")
	got, err := f.metric.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]int{}
	for _, mf := range got {
		series[mf.GetName()] = len(mf.GetMetric())
	}
	for name, want := range map[string]int{
		"accord_metrics_reporter_source_errors_total": 1, "accord_metrics_reporter_nodes_skipped_total": 1, "accord_metrics_reporter_writes_total": 4,
	} {
		if series[name] != want {
			t.Errorf("%s has %d series before any report, want %d", name, series[name], want)
		}
	}
	if v, err := testutil.GetCounterMetricValue(f.metric.SourceErrors.WithLabelValues(f.src.Name())); err != nil || v != 0 {
		t.Errorf("source errors %v (%v), want 0", v, err)
	}
}

// Each NodeMetric status written sets the node's update-time gauge to its status.updateTime; a
// forgotten (deleted) node's series goes.
func TestUpdateTimeGauge(t *testing.T) {
	f := newFixture(t, "last", "n1")
	f.src.usage = metricsource.Usage{Nodes: map[string]corev1.ResourceList{"n1": rl("1", "1Gi")}}
	if err := f.step(t); err != nil {
		t.Fatal(err)
	}
	want := float64(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix())
	if v, err := testutil.GetGaugeMetricValue(f.metric.UpdateTime.WithLabelValues("n1")); err != nil || v != want {
		t.Fatalf("update time of n1 = %v (%v), want %v", v, err, want)
	}
	f.r.Forget("n1")
	got, err := f.metric.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range got {
		if mf.GetName() == "accord_metrics_reporter_nodemetric_update_timestamp_seconds" && len(mf.GetMetric()) != 0 {
			t.Errorf("after Forget: %d series, want none", len(mf.GetMetric()))
		}
	}
}
