package benchmarks

import (
	"context"
	"flag"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/accord-sched/accord/apis/config"
	"github.com/accord-sched/accord/pkg/constraints"
	"github.com/accord-sched/accord/pkg/descheduler/evictions"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/highnodeutilization"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/plugintest"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/lownodeload"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/lownodeutilization"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/nodecrdresourcefit"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/podlifetime"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/removeduplicates"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/removefailedpods"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/removepodshavingtoomanyrestarts"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/removepodsviolatinginterpodantiaffinity"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/removepodsviolatingnodeaffinity"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/removepodsviolatingnodetaints"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/removepodsviolatingtopologyspreadconstraint"
)

func TestMain(m *testing.M) {
	// Dry-run evictions are logged; keep the benchmark output readable.
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	klog.SetOutput(io.Discard)
	os.Exit(m.Run())
}

type plugin struct {
	name    string
	factory framework.PluginFactory
	args    interface {
		k8sruntime.Object
		framework.ArgsDefaulter
	}
}

// standard is the standard profile of pkg/descheduler/framework/plugins/testdata/policies/standard.yaml
// (with the lifetime raised so that the synthetic pods are not all old).
func standard() []plugin {
	return []plugin{
		{removepodsviolatingnodeaffinity.Name, removepodsviolatingnodeaffinity.New, &removepodsviolatingnodeaffinity.RemovePodsViolatingNodeAffinityArgs{
			NodeAffinityType: []string{removepodsviolatingnodeaffinity.Required, removepodsviolatingnodeaffinity.Preferred}}},
		{removepodsviolatingnodetaints.Name, removepodsviolatingnodetaints.New, &removepodsviolatingnodetaints.RemovePodsViolatingNodeTaintsArgs{}},
		{removepodsviolatinginterpodantiaffinity.Name, removepodsviolatinginterpodantiaffinity.New, &removepodsviolatinginterpodantiaffinity.RemovePodsViolatingInterPodAntiAffinityArgs{}},
		{removepodshavingtoomanyrestarts.Name, removepodshavingtoomanyrestarts.New, &removepodshavingtoomanyrestarts.RemovePodsHavingTooManyRestartsArgs{PodRestartThreshold: 10, IncludingInitContainers: true}},
		{podlifetime.Name, podlifetime.New, &podlifetime.PodLifeTimeArgs{MaxPodLifeTimeSeconds: ptr.To[uint](7 * 86400)}},
		{removefailedpods.Name, removefailedpods.New, &removefailedpods.RemoveFailedPodsArgs{}},
		{removeduplicates.Name, removeduplicates.New, &removeduplicates.RemoveDuplicatesArgs{}},
		{removepodsviolatingtopologyspreadconstraint.Name, removepodsviolatingtopologyspreadconstraint.New, &removepodsviolatingtopologyspreadconstraint.RemovePodsViolatingTopologySpreadConstraintArgs{}},
		{lownodeutilization.Name, lownodeutilization.New, &lownodeutilization.LowNodeUtilizationArgs{
			Thresholds:       pluginutil.ResourceThresholds{"cpu": 20, "memory": 20, "pods": 20},
			TargetThresholds: pluginutil.ResourceThresholds{"cpu": 50, "memory": 50, "pods": 50}}},
		{highnodeutilization.Name, highnodeutilization.New, &highnodeutilization.HighNodeUtilizationArgs{Thresholds: pluginutil.ResourceThresholds{"cpu": 5, "memory": 5}}},
	}
}

func accord() []plugin {
	return []plugin{
		{nodecrdresourcefit.Name, nodecrdresourcefit.New, &nodecrdresourcefit.NodeCRDResourceFitArgs{MissingCRPolicy: config.MissingCRPolicyReject}},
		{lownodeload.Name, lownodeload.New, &lownodeload.LowNodeLoadArgs{
			HighThresholds: map[corev1.ResourceName]int64{"cpu": 85, "memory": 95}, LowThresholds: map[corev1.ResourceName]int64{"cpu": 40, "memory": 60},
			// The synthetic metrics are stamped when the cluster is built; never expire them, however
			// long the benchmarks before this one take.
			ConsecutiveAbnormalities: 1, UsageEstimateArgs: constraints.UsageEstimateArgs{NodeMetricExpirationSeconds: ptr.To[int64](0)}}},
	}
}

// run runs one cycle of the plugin.
func run(ctx context.Context, pl framework.Plugin, nodes []*corev1.Node) *framework.Status {
	if d, ok := pl.(framework.DeschedulePlugin); ok {
		return d.Deschedule(ctx, nodes)
	}
	return pl.(framework.BalancePlugin).Balance(ctx, nodes)
}

// heapSampler records the peak of live heap objects while it runs, without stopping the world.
type heapSampler struct {
	peak atomic.Uint64
	stop chan struct{}
	wg   sync.WaitGroup
}

func heapNow() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func startSampler() *heapSampler {
	h := &heapSampler{stop: make(chan struct{})}
	h.peak.Store(heapNow())
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-t.C:
				if v := heapNow(); v > h.peak.Load() {
					h.peak.Store(v)
				}
			}
		}
	}()
	return h
}

func (h *heapSampler) Stop() uint64 { close(h.stop); h.wg.Wait(); return h.peak.Load() }

// BenchmarkCycle runs one cycle of each plugin, then of the whole standard profile, over 5000 nodes
// and 100 000 pods in informer caches, with a dry-run evictor (DefaultEvictor filters, no limits).
// Besides ns/op and allocs/op it reports the peak live heap during the runs (peak-heap-MB), the part
// of it above the informer caches (heap-over-caches-MB) and the evictions one cycle nominates.
func BenchmarkCycle(b *testing.B) {
	objs, crs := synthetic()
	env := plugintest.NewFromCaches(b, plugintest.Options{DryRun: true}, objs, crs)
	objs, crs = nil, nil
	all, err := env.Factory.Core().V1().Nodes().Lister().List(labels.Everything())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	build := func(b *testing.B, p plugin) framework.Plugin {
		p.args.SetDefaults()
		if v, ok := p.args.(framework.ArgsValidator); ok {
			if errs := v.Validate(nil); len(errs) > 0 {
				b.Fatal(errs.ToAggregate())
			}
		}
		pl, err := p.factory(ctx, p.args, env.Handle())
		if err != nil {
			b.Fatal(err)
		}
		return pl
	}
	measure := func(b *testing.B, cycle func() error) {
		runtime.GC()
		base := heapNow()
		sampler := startSampler()
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			env.NewCycle()
			if err := cycle(); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		peak := sampler.Stop()
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
		b.ReportMetric(float64(peak-min(peak, base))/(1<<20), "heap-over-caches-MB")
		b.ReportMetric(float64(env.Evictor.Limiter.Total()), "evictions/cycle")
	}
	for _, p := range append(standard(), accord()...) {
		b.Run(p.name, func(b *testing.B) {
			pl := build(b, p)
			measure(b, func() error { return run(ctx, pl, all).AsError() })
		})
	}
	profile := func(b *testing.B) {
		var pls []framework.Plugin
		for _, p := range standard() {
			pls = append(pls, build(b, p))
		}
		measure(b, func() error {
			// Deschedule plugins first, then balance plugins, as the runtime orders them.
			for _, pass := range []bool{true, false} {
				for _, pl := range pls {
					if _, isD := pl.(framework.DeschedulePlugin); isD != pass {
						continue
					}
					if err := run(ctx, pl, all).AsError(); err != nil {
						return err
					}
				}
			}
			return nil
		})
	}
	b.Run("StandardProfile", profile)
	// The same with standard.yaml's limits (5 per node, 100 in total), as a deployment would run it.
	b.Run("StandardProfileWithLimits", func(b *testing.B) {
		unlimited := env.Evictor.Limiter
		perNode, total := 5, 100
		env.Evictor.Limiter = evictions.NewLimiter(evictions.Limits{PerNode: &perNode, Total: &total})
		defer func() { env.Evictor.Limiter = unlimited }()
		profile(b)
	})
}
