package scale

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	accordclient "github.com/accord-sched/accord/pkg/generated/clientset/versioned"
	"github.com/accord-sched/accord/test/harness"
)

// TestScale builds kube-scheduler, accord-scheduler and accord-descheduler and, for each population
// of the size (see scaleSize; the heterogeneous one first), starts a control plane with that
// population and prints the FIGURE lines: (a) kube-scheduler with its default profile, then
// accord-scheduler with the Accord profile, each binding the same number of pending pods, with
// their ratios; (b) one dry-run descheduler cycle with default caps (and without, if asked); (c)
// kube-scheduler binding pending copies of that cycle's candidates in the same cluster state, its CPU
// per pod next to the descheduler's simulation per candidate. It asserts what must hold at any
// speed: every pod bound, a cycle completed that simulated candidates and would evict pods.
func TestScale(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries and starts a control plane")
	}
	sz, big := scaleSize(t)
	var b binaries
	// The reference is kube-scheduler itself, built from the k8s.io/kubernetes module accord-
	// scheduler is built on (v1.36.3), not accord-scheduler with the default profile: accord-
	// scheduler's command also changes how kube-scheduler's informers keep pods and nodes. The
	// descheduler half uses it too, for (c).
	b.ref = harness.BuildBinary(t, "k8s.io/kubernetes/cmd/kube-scheduler")
	if sz.runs("scheduler") {
		b.sched = harness.BuildBinary(t, "github.com/accord-sched/accord/cmd/scheduler")
		b.baseline, b.baselineName = os.Getenv("ACCORD_SCALE_SCHEDULER_BASELINE"), os.Getenv("ACCORD_SCALE_SCHEDULER_BASELINE")
		if sz.Baseline != "" {
			if b.baseline != "" {
				t.Fatal("ACCORD_SCALE_BASELINE and ACCORD_SCALE_SCHEDULER_BASELINE both set: give the baseline once")
			}
			var commit string
			b.baseline, commit = buildBaseline(t, sz.Baseline)
			b.baselineName = fmt.Sprintf("%s (%s)", sz.Baseline, commit)
		}
	}
	if sz.runs("descheduler") {
		b.desched = harness.BuildBinary(t, "github.com/accord-sched/accord/cmd/descheduler")
	}
	for _, pop := range sz.Populations {
		t.Run(pop.String(), func(t *testing.T) { scalePopulation(t, pop, sz, b) })
	}
	if !big {
		t.Log("smoke size; run `make bench-scale` for the cluster-scale figures")
	}
}

// binaries are the binaries TestScale runs (empty: that half does not run; no baseline: no
// accord-baseline contender). baselineName says what the baseline was built from.
type binaries struct{ ref, sched, desched, baseline, baselineName string }

// scalePopulation is TestScale on one population, on its own control plane.
func scalePopulation(t *testing.T, pop population, sz size, b binaries) {
	ctx := context.Background()
	c := startCluster(t, ctx, pop, sz.Nodes)
	client, accord, kubeconfig := c.client, c.accord, c.kubeconfig

	// (a) The scheduler: the reference first, then the Accord profile, on the same nodes.
	refConfig, accordConfig := schedulerConfigs(t, kubeconfig)
	if sz.runs("scheduler") {
		runSchedulers(t, ctx, client, accord, pop, b, kubeconfig, refConfig, accordConfig, sz)
	}
	if !sz.runs("descheduler") {
		return
	}

	// (b) The descheduler over bound pods, 1% of the nodes (at least one) no longer offering memory.
	ns := "bound"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := createBoundPods(ctx, client, pop, ns, "accord-scheduler", sz.BoundPods, sz.Nodes); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bound Running pods created in %s", sz.BoundPods, time.Since(start).Round(time.Millisecond))
	violating := max(sz.Nodes/100, 1)
	for i := 0; i < violating; i++ {
		// Light nodes (not a multiple of 5), so LowNodeUtilization does not also pick them.
		if err := disableMemory(ctx, accord, i*5+1); err != nil {
			t.Fatal(err)
		}
	}
	gogcs := deschedulerGOGCs(t)
	if dir := pprofDir(); dir != "" {
		profileDescheduler(t, ctx, b.desched, kubeconfig, accordConfig, dir, gogcs[0])
	}
	variants := []struct{ name, limits string }{{"default-caps", ""}}
	if sz.Uncapped {
		variants = append(variants, struct{ name, limits string }{"uncapped", "maxNoOfPodsToEvictPerNode: 1000000\nmaxNoOfPodsToEvictTotal: 1000000"})
	}
	// Each variant once per GOGC value (and build: this tree's, then, with
	// ACCORD_SCALE_DESCHEDULER_BASELINE, that binary's on the same cluster state); the capped cycle
	// of this tree's with the first GOGC is (c)'s.
	builds := []struct{ name, bin string }{{"", b.desched}}
	if bl := os.Getenv("ACCORD_SCALE_DESCHEDULER_BASELINE"); bl != "" {
		builds = append(builds, struct{ name, bin string }{" baseline", bl})
		t.Logf("accord-descheduler baseline: %s (ACCORD_SCALE_DESCHEDULER_BASELINE)", bl)
	}
	var capped deschedRun
	for _, v := range variants {
		for i, gogc := range gogcs {
			for j, build := range builds {
				if err := refreshNodeMetrics(ctx, accord, pop, sz.Nodes); err != nil {
					t.Fatal(err)
				}
				r := runDescheduler(t, ctx, build.bin, kubeconfig, accordConfig, v.name+build.name, v.limits, gogc)
				perSec, perCand, perSim := 0.0, 0.0, 0.0
				if r.Simulated > 0 {
					perSec = float64(r.Simulated) / r.Cycle.Seconds()
					perCand = r.Cycle.Seconds() * 1000 / float64(r.Simulated)
					perSim = r.Simulation.Seconds() * 1000 / float64(r.Simulated)
				}
				figure(t, "descheduler %s population=%s nodes=%d pods=%d (%d nodes violating NodeCRDResourceFit, %s): cycle %.2fs, wall %.1fs, %d candidates simulated (%d admitted, %d dry-run evictions), %.0f candidates/s (%.2f ms of cycle per candidate, %.2f ms simulating), CPU %.1fs, peak RSS %.0f MiB (largest live heap %.0f MiB, heap peak %.0f MiB), %d GCs during the cycle (%.0f ms marking), plugins skipped at the total cap from: %q; peak RSS reached at %.1fs (%s; caches synced at %.1fs, cycle %.1f-%.1fs), the largest heap at the collection of %.1fs (%s)",
					r.Variant, pop, sz.Nodes, sz.BoundPods, violating, deschedulerGC(r.GOGC), r.Cycle.Seconds(), r.Wall.Seconds(), r.Simulated, r.Admitted, r.DryRun, perSec, perCand, perSim, r.CPU.Seconds(), mib(r.PeakRSS), mib(r.LiveHeap), mib(r.HeapPeak), r.GCs, r.GCMark.Seconds()*1000, r.CapSkippedFrom,
					r.PeakAt.Seconds(), r.phase(r.PeakAt), r.SyncedAt.Seconds(), r.CycleStart.Seconds(), r.CycleEnd.Seconds(), r.HeapPeakAt.Seconds(), r.phase(r.HeapPeakAt))
				if r.Simulated == 0 || r.DryRun == 0 {
					t.Errorf("descheduler %s: %d candidates simulated, %d dry-run evictions: the population must give it work", r.Variant, r.Simulated, r.DryRun)
				}
				switch {
				case j > 0:
				case v.name == "default-caps" && i == 0:
					capped = r
				case v.name != "default-caps" && r.Simulated < capped.Simulated:
					t.Errorf("uncapped cycle simulated %d candidates, fewer than the capped one's %d", r.Simulated, capped.Simulated)
				}
			}
		}
	}

	// (c) The simulation's bar: kube-scheduler scheduling pending copies of the capped cycle's
	// candidates, in their namespace, next to the pods the descheduler saw.
	if len(capped.Candidates) == 0 {
		return
	}
	ref := runSchedulerOn(t, ctx, client, pop, b.ref, refConfig, "kube-scheduler-candidates", sz.Nodes, candidateCopies(client, ns, capped.Candidates), schedOpts{})
	refPerPod := ref.WindowCPU.Seconds() * 1000 / float64(ref.Pods)
	simPerCand := capped.Simulation.Seconds() * 1000 / float64(capped.Simulated)
	if ref.WindowCPU <= 0 {
		// A handful of copies bind within one clock tick of the process's CPU counters.
		t.Logf("kube-scheduler bound the %d candidate copies within one CPU clock tick: no per-pod CPU to compare with the simulation's %.2f ms", ref.Pods, simPerCand)
		return
	}
	figure(t, "simulation ratio accord-descheduler/kube-scheduler population=%s nodes=%d pods=%d: %.2f ms simulating per candidate (%d candidates, wall) vs %.2f ms CPU per pod for kube-scheduler binding %d pending copies of them (while binding): %.2fx",
		pop, sz.Nodes, sz.BoundPods, simPerCand, capped.Simulated, refPerPod, ref.Pods, simPerCand/refPerPod)
}

// candidateCopyLabel marks the pending copies of the descheduler's candidates.
const candidateCopyLabel = "scale.accord.dev/candidate-copy"

// candidateCopies is the batch of pending copies of the candidates (namespace/name) for
// kube-scheduler's default profile: each candidate's spec without its node, and its labels and
// owner, in its namespace ns, so its spread and anti-affinity terms count the same pods.
func candidateCopies(client kubernetes.Interface, ns string, candidates []string) podBatch {
	return podBatch{ns: ns, selector: candidateCopyLabel + "=true", n: len(candidates), create: func(ctx context.Context) error {
		return parallel(ctx, len(candidates), func(ctx context.Context, i int) error {
			name := strings.TrimPrefix(candidates[i], ns+"/")
			orig, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("candidate %s: %w", candidates[i], err)
			}
			labels := map[string]string{candidateCopyLabel: "true"}
			for k, v := range orig.Labels {
				labels[k] = v
			}
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "copy-" + name, Labels: labels, OwnerReferences: orig.OwnerReferences},
				Spec: *orig.Spec.DeepCopy()}
			p.Spec.NodeName, p.Spec.SchedulerName = "", corev1.DefaultSchedulerName
			if _, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating pod %s/%s: %w", ns, p.Name, err)
			}
			return nil
		})
	}}
}

// contender is one scheduler runSchedulers compares: a binary with a configuration, binding pods of
// schedulerName; with reservations, created before each of its runs and deleted after.
type contender struct {
	name, bin, config, schedulerName string
	args                             []string
	reservations                     reservationLoad
}

// runSchedulers runs sz.Rounds interleaved rounds of the contenders on the population: in each,
// every contender binds sz.Pods pending pods once, the order rotated by one each round (so no
// contender always runs first, or right after the same one). The contenders: kube-scheduler (refBin)
// with its default profile (refConfig); accord-scheduler with the Accord profile (accordConfig);
// with a baseline, the baseline's accord-scheduler with the same profile; with reservations
// (sz.Reservations), accord-reservations: accord-scheduler with the reservations of the load present
// (created, and the live ones placed, before each of its runs), the Accord profile then having the
// Reservation plugin for both accord contenders (and the baseline). It prints each run's figures,
// each contender's min/median/max over the rounds, and the ratios of the rounds' pairs as
// min/median/max. The population's churn runs during each run.
func runSchedulers(t *testing.T, ctx context.Context, client kubernetes.Interface, accord accordclient.Interface, pop population, b binaries, kubeconfig, refConfig, accordConfig string, sz size) {
	t.Helper()
	profile := "the Accord profile"
	if sz.Reservations != (reservationLoad{}) {
		accordConfig = reservationSchedulerConfig(t, kubeconfig)
		profile = "the Accord profile with the Reservation plugin"
	}
	cs := []contender{
		{name: "kube-scheduler-default", bin: b.ref, config: refConfig, schedulerName: corev1.DefaultSchedulerName},
		{name: "accord", bin: b.sched, config: accordConfig, schedulerName: "accord-scheduler"},
	}
	if b.baseline != "" {
		cs = append(cs, contender{name: "accord-baseline", bin: b.baseline, config: accordConfig, schedulerName: "accord-scheduler"})
	}
	if sz.Reservations != (reservationLoad{}) {
		cs = append(cs, contender{name: "accord-reservations", bin: b.sched, config: accordConfig, schedulerName: "accord-scheduler",
			args: []string{reservationRetention}, reservations: sz.Reservations})
	}
	run := func(c contender, round int) schedRun {
		batch := pendingBatch(t, ctx, client, pop, fmt.Sprintf("%s-r%d", c.name, round), c.schedulerName, sz.Pods)
		if c.reservations != (reservationLoad{}) {
			createReservations(t, ctx, accord, pop, c.bin, c.config, batch.ns, c.reservations, sz.Nodes)
		}
		// LoadAware ignores a NodeMetric older than 180 s: every run starts with fresh ones.
		if err := refreshNodeMetrics(ctx, accord, pop, sz.Nodes); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		start := time.Now()
		counts := churn(ctx, accord, pop, sz.Nodes, stop)
		r := runSchedulerOn(t, ctx, client, pop, c.bin, c.config, c.name, sz.Nodes, batch, schedOpts{round: round, rounds: sz.Rounds, args: c.args})
		close(stop)
		cc := <-counts
		if cc.err != nil {
			t.Fatalf("churn during the %s run: %v", c.name, cc.err)
		}
		if pop == heterogeneous {
			t.Logf("%s: during the run (%s) %d NodeMetric updates (%.1f/s) and %d ClusterScopedResource changes",
				c.name, time.Since(start).Round(time.Second), cc.metrics, float64(cc.metrics)/time.Since(start).Seconds(), cc.crs)
		}
		if c.reservations != (reservationLoad{}) {
			checkReservations(t, ctx, accord, batch.ns, c.reservations)
		}
		if r.PodsPerSec <= 0 {
			t.Fatalf("%s round %d: no throughput measured: %+v", c.name, round, r)
		}
		return r
	}
	runs := make([][]schedRun, len(cs))
	for round := 1; round <= sz.Rounds; round++ {
		for j := range cs {
			k := (j + round - 1) % len(cs)
			runs[k] = append(runs[k], run(cs[k], round))
		}
	}

	head := fmt.Sprintf("population=%s nodes=%d pods=%d over %d rounds", pop, sz.Nodes, sz.Pods, sz.Rounds)
	for i, c := range cs {
		rs := runs[i]
		figure(t, "scheduler %s %s (min/median/max): %s pods/s, CPU per pod %s ms (%s ms while binding), peak RSS %s MiB",
			c.name, head, over(rs, func(r schedRun) float64 { return r.PodsPerSec }).f("%.0f"),
			over(rs, func(r schedRun) float64 { return cpuPerPod(r, false) }).f("%.2f"),
			over(rs, func(r schedRun) float64 { return cpuPerPod(r, true) }).f("%.2f"),
			over(rs, func(r schedRun) float64 { return mib(r.PeakRSS) }).f("%.0f"))
	}
	ratios := func(a, b int, note string) {
		x, y := runs[a], runs[b]
		figure(t, "scheduler ratio %s/%s %s (min/median/max of the rounds' ratios): throughput %sx, CPU per pod %sx (%sx while binding), peak RSS %sx%s",
			cs[a].name, cs[b].name, head,
			overPairs(x, y, func(a, b schedRun) float64 { return a.PodsPerSec / b.PodsPerSec }).f("%.2f"),
			overPairs(x, y, func(a, b schedRun) float64 { return ratio(a.CPU, b.CPU) }).f("%.2f"),
			overPairs(x, y, func(a, b schedRun) float64 { return ratio(a.WindowCPU, b.WindowCPU) }).f("%.2f"),
			overPairs(x, y, func(a, b schedRun) float64 { return float64(a.PeakRSS) / float64(b.PeakRSS) }).f("%.2f"), note)
	}
	ratios(1, 0, "")
	for i := 2; i < len(cs); i++ {
		switch cs[i].name {
		case "accord-baseline":
			ratios(1, i, " (baseline: "+b.baselineName+")")
		case "accord-reservations":
			ratios(i, 1, fmt.Sprintf(" (%s reservations present against none)", sz.Reservations))
		}
	}
	t.Logf("the reference is kube-scheduler v1.36.3 (k8s.io/kubernetes/cmd/kube-scheduler) with its default profile; the accord contenders run %s", profile)
}

// figure prints a measured figure on its own line (make bench-scale greps for FIGURE).
func figure(t *testing.T, format string, args ...any) {
	t.Helper()
	line := "FIGURE " + fmt.Sprintf(format, args...)
	fmt.Println(line)
	t.Log(line)
}

func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return a.Seconds() / b.Seconds()
}
