package reliability

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	corev1 "k8s.io/api/core/v1"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/nodecrdresourcefit"
	fwruntime "github.com/accord-sched/accord/pkg/descheduler/framework/runtime"
	"github.com/accord-sched/accord/test/harness"
)

// A periodic cycle's plugin and an event-triggered controller (two profiles here, sharing the
// descheduler's limiter as every evictor of one descheduler does) nominate the same pod at the same
// moment, several times over, and again later from their stale caches: the apiserver accepts exactly
// one eviction, and exactly one is counted.
func TestEvictionRaceOnOnePod(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, "race", "n1")
	proxy := newFaultProxy(t)
	profiles := []string{"cycle", "events"}
	d := buildDescheduler(t, c.writePolicy(evictionPolicy(profiles...)), proxy.config())
	pod := c.create(c.newPod("contested", c.node("n1"), nil))[0]
	const racers = 8
	start := make(chan struct{})
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := range racers {
		ev := d.Profiles()[i%len(profiles)].Evictor()
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = ev.Evict(ctx, pod.DeepCopy(), framework.EvictOptions{PluginName: "Reliability", Reason: "race"})
		}()
	}
	close(start)
	wg.Wait()
	// Later nominations from caches that have not seen the eviction yet.
	for _, p := range d.Profiles() {
		errs = append(errs, p.Evictor().Evict(ctx, pod.DeepCopy(), framework.EvictOptions{PluginName: "Reliability", Reason: "late"}))
	}
	won, goneN := 0, 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case framework.IsPodGone(err):
			goneN++
		default:
			t.Errorf("eviction %d: %v, want success or ErrPodGone", i, err)
		}
	}
	accepted := proxy.accepted(c.ns + "/" + pod.Name)
	counted := successes(d, "Reliability", pod, profiles...)
	if won != 1 || accepted != 1 || counted != 1 {
		t.Errorf("evictions: %d returned success, %d accepted by the apiserver, %v counted; want 1, 1, 1 (answers %v)", won, accepted, counted, proxy.answers())
	}
	if g, err := gone(ctx, pod); err != nil || !g {
		t.Errorf("pod not evicted (gone=%v, err %v)", g, err)
	}
	figure(t, "eviction_race_accepted", "%d of %d nominations of one pod (%d concurrent from 2 profiles, %d late; %d ErrPodGone)", accepted, len(errs), racers, len(profiles), goneN)
}

// A periodic cycle and the event-triggered controller of the same plugin (NodeCRDResourceFit,
// started as the runner starts it) go for the same pods: cycles run back to back while the CRs of 8
// nodes stop enabling the CPU their pod requests, so the CR change reaches the controller (its event)
// and the cycles (their cache) at the same moment. Each pod is evicted exactly once: the apiserver
// accepts one eviction per pod and one success is counted per pod. Which path nominated each pod
// (from the eviction spans: a cycle's evictions are children of its cycle span, the controller's are
// not) is the figure.
func TestCycleAndEventControllerRaceForOnePod(t *testing.T) {
	const nodes = 8
	ctx := context.Background()
	short := make([]string, nodes)
	for i := range short {
		short[i] = fmt.Sprintf("n%d", i)
	}
	c := newCluster(t, "ctlrace", short...)
	c.createCRs()
	var pods []*corev1.Pod
	for i, n := range c.nodes {
		pods = append(pods, c.cpuPod(fmt.Sprintf("contested-%d", i), n))
	}
	pods = c.create(pods...)
	proxy := newFaultProxy(t)
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	d := buildDescheduler(t, c.writePolicy(crdResourceFitPolicy("race", "")), proxy.config(),
		func(o *fwruntime.Options) { o.TracerProvider = tp })
	if len(d.Controllers()) != 1 {
		t.Fatalf("%d controllers, want NodeCRDResourceFit's", len(d.Controllers()))
	}
	runCtx, cancel := context.WithCancel(ctx)
	waitControllers := d.StartControllers(runCtx)
	var cycles atomic.Int64
	cyclesDone := make(chan struct{})
	go func() {
		defer close(cyclesDone)
		for runCtx.Err() == nil {
			d.RunCycle(runCtx)
			cycles.Add(1)
		}
	}()
	defer func() { cancel(); <-cyclesDone; waitControllers() }()

	c.disableCPU(c.nodes...)
	if err := harness.WaitFor(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		for _, p := range pods {
			if g, err := gone(ctx, p); err != nil || !g {
				return false, err
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("violators not evicted: %v (answers %v)", err, proxy.answers())
	}
	// More cycles on caches that may still hold the evicted pods.
	before := cycles.Load()
	if err := harness.WaitFor(ctx, 30*time.Second, func(context.Context) (bool, error) { return cycles.Load() > before+3, nil }); err != nil {
		t.Fatalf("cycles stopped: %v", err)
	}
	cancel()
	<-cyclesDone

	byCycle, byController, bothPaths := map[string]int{}, map[string]int{}, 0
	for _, s := range spans.Ended() {
		if s.Name() != fwruntime.SpanEvict {
			continue
		}
		var pod string
		for _, a := range s.Attributes() {
			if a.Key == fwruntime.AttrPod {
				pod = a.Value.AsString()
			}
		}
		if s.Parent().IsValid() {
			byCycle[pod]++
		} else {
			byController[pod]++
		}
	}
	for _, p := range pods {
		key := p.Namespace + "/" + p.Name
		if n := proxy.accepted(key); n != 1 {
			t.Errorf("pod %s: %d evictions accepted by the apiserver, want 1 (answers %v)", key, n, proxy.answers()[key])
		}
		if n := successes(d, nodecrdresourcefit.Name, p, "race"); n != 1 {
			t.Errorf("pod %s: %v evictions counted, want 1", key, n)
		}
		if byCycle[key] > 0 && byController[key] > 0 {
			bothPaths++
		}
	}
	nc, nk := 0, 0
	for _, n := range byCycle {
		nc += n
	}
	for _, n := range byController {
		nk += n
	}
	figure(t, "cycle_controller_race", "%d pods, each evicted once (apiserver-accepted, counted); nominations: %d by %d back-to-back cycles, %d by the event-triggered controller; %d pods nominated by both",
		len(pods), nc, cycles.Load(), nk, bothPaths)
}
