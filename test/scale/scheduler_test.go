package scale

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	accordclient "github.com/accord-sched/accord/pkg/generated/clientset/versioned"
	"github.com/accord-sched/accord/test/harness"
)

// schedRun is what one scheduler run measured.
type schedRun struct {
	Profile      string
	Pods         int
	PodsPerSec   float64       // from the first bind to the last
	CPU          time.Duration // of the whole process, start to last bind
	WindowCPU    time.Duration // from the first bind to the last
	PeakRSS      int64         // VmHWM at the last bind
	FirstBindLag time.Duration // from the process start to the first bind (informer sync included)
}

// sampleSchedulerConfig returns manifests/scheduler/config.yaml, decoded.
func sampleSchedulerConfig(t *testing.T) map[string]any {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test file")
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "manifests", "scheduler", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("manifests/scheduler/config.yaml: %v", err)
	}
	return cfg
}

// schedulerConfigs writes the two configurations the benchmark compares and returns their paths:
// the reference (kube-scheduler's default profile, no Accord plugin) and the Accord profile of
// manifests/scheduler/config.yaml as shipped. Both get kubeconfig and client QPS/burst 5000, so
// neither is throttled by its client.
func schedulerConfigs(t *testing.T, kubeconfig string) (reference, accord string) {
	t.Helper()
	dir := t.TempDir()
	accord = writeSchedulerConfig(t, dir, "accord.yaml", kubeconfig, sampleSchedulerConfig(t))
	ref := sampleSchedulerConfig(t)
	ref["profiles"] = []any{map[string]any{"schedulerName": corev1.DefaultSchedulerName}}
	reference = writeSchedulerConfig(t, dir, "reference.yaml", kubeconfig, ref)
	return reference, accord
}

// reservationSchedulerConfig writes the Accord profile of manifests/scheduler/config.yaml with the
// Reservation plugin added at multiPoint (as its README says to enable it; the shipped profile does
// not have it) and returns its path: the profile of the accord contenders when RESERVATIONS is set.
func reservationSchedulerConfig(t *testing.T, kubeconfig string) string {
	t.Helper()
	cfg := sampleSchedulerConfig(t)
	profiles, _ := cfg["profiles"].([]any)
	if len(profiles) != 1 {
		t.Fatalf("manifests/scheduler/config.yaml: want one profile, got %d", len(profiles))
	}
	plugins, _ := profiles[0].(map[string]any)["plugins"].(map[string]any)
	multiPoint, _ := plugins["multiPoint"].(map[string]any)
	enabled, _ := multiPoint["enabled"].([]any)
	if multiPoint == nil || enabled == nil {
		t.Fatal("manifests/scheduler/config.yaml: no profiles[0].plugins.multiPoint.enabled to add the Reservation plugin to")
	}
	multiPoint["enabled"] = append(enabled, map[string]any{"name": "Reservation"})
	return writeSchedulerConfig(t, t.TempDir(), "accord-reservation.yaml", kubeconfig, cfg)
}

// writeSchedulerConfig writes cfg as dir/name with kubeconfig, client QPS/burst 5000, no leader
// election and pprof as pprofDir asks, and returns its path.
func writeSchedulerConfig(t *testing.T, dir, name, kubeconfig string, cfg map[string]any) string {
	t.Helper()
	cfg["clientConnection"] = map[string]any{"kubeconfig": kubeconfig, "qps": 5000, "burst": 5000}
	cfg["leaderElection"] = map[string]any{"leaderElect": false}
	// The shipped configuration turns pprof off; with --config, kube-scheduler takes it from the
	// file, not from --profiling (pprofArgs).
	cfg["enableProfiling"] = pprofDir() != ""
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// bindWatch counts the pods of a namespace that get a node, and when the first and last did.
type bindWatch struct {
	mu          sync.Mutex
	bound       map[string]bool
	first, last time.Time
	firstCPU    time.Duration
	pid         int
	onFirst     func() // called (under mu) at the first bind
}

func (w *bindWatch) observe(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.Spec.NodeName == "" {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.bound[p.Name] {
		return
	}
	w.bound[p.Name] = true
	if w.first.IsZero() {
		w.first = now
		if w.pid != 0 {
			w.firstCPU, _ = procCPU(w.pid)
		}
		if w.onFirst != nil {
			w.onFirst()
		}
	}
	w.last = now
}

func (w *bindWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.bound)
}

// podBatch is a set of pending pods a scheduler run binds: n pods in namespace ns matching selector
// (empty: every pod of ns), made by create.
type podBatch struct {
	ns, selector string
	n            int
	create       func(ctx context.Context) error
}

// pendingBatch is pods pending pods of the population for schedulerName in a fresh namespace
// named after the profile.
func pendingBatch(t *testing.T, ctx context.Context, client kubernetes.Interface, pop population, profile, schedulerName string, pods int) podBatch {
	t.Helper()
	ns := fmt.Sprintf("sched-%s", profile)
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
	return podBatch{ns: ns, n: pods, create: func(ctx context.Context) error {
		return createPendingPods(ctx, client, pop, ns, schedulerName, pods)
	}}
}

// schedOpts is what one run adds to the scheduler's binary and configuration.
type schedOpts struct {
	// round (from 1) of rounds, when the run is one of runSchedulers' interleaved rounds (rounds 0:
	// a single run); it names the run in its FIGURE line and its profiles' files.
	round, rounds int
	// args are more command-line flags.
	args []string
}

// runSchedulerOn creates the batch's pods, starts the scheduler binary with config, waits until
// every pod of the batch is bound and measures the process; it deletes the batch's pods before
// returning.
func runSchedulerOn(t *testing.T, ctx context.Context, client kubernetes.Interface, pop population, bin, config, profile string, nodes int, b podBatch, o schedOpts) schedRun {
	t.Helper()
	ns, pods := b.ns, b.n
	// The profiles' file names carry the population: both populations run in one invocation.
	label, file := profile, fmt.Sprintf("%s-%s", pop, profile)
	if o.rounds > 0 {
		label, file = fmt.Sprintf("%s round=%d/%d", profile, o.round, o.rounds), fmt.Sprintf("%s-%s-r%d", pop, profile, o.round)
	}
	start := time.Now()
	if err := b.create(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d pending pods created in %s", profile, pods, time.Since(start).Round(time.Millisecond))

	w := &bindWatch{bound: map[string]bool{}}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = b.selector }))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.observe,
		UpdateFunc: func(_, obj any) { w.observe(obj) },
	}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	defer func() { close(stop); factory.Shutdown() }()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("pod informer did not sync")
	}
	if n := w.count(); n != 0 {
		t.Fatalf("%d pods of %s bound before the scheduler started", n, ns)
	}

	pctx, kill := context.WithCancel(ctx)
	defer kill()
	args := []string{"--config=" + config, "--secure-port=0"}
	dir, port := pprofDir(), 0
	if dir != "" {
		port = harness.FreePort(t)
		args = append(args[:1], pprofArgs(port)...)
	}
	args = append(args, o.args...)
	// With a log directory the scheduler runs with gctrace, and its RSS is sampled (schedLog).
	logDir := os.Getenv("ACCORD_SCALE_SCHEDULER_LOG_DIR")
	var env []string
	if logDir != "" {
		env = append(os.Environ(), "GODEBUG=gctrace=1")
	}
	started := time.Now()
	cmd, out := harness.StartProcessEnv(t, pctx, env, bin, args...)
	var samples *rssSamples
	if logDir != "" {
		samples = sampleRSS(cmd.Process.Pid, started)
	}
	w.mu.Lock()
	w.pid = cmd.Process.Pid
	profiled := make(chan error, 1)
	if dir != "" {
		secs := profileSeconds(t)
		w.onFirst = func() {
			go func() {
				profiled <- fetchProfile(ctx, port, fmt.Sprintf("profile?seconds=%d", int(secs.Seconds())), dir, file+".cpu.pprof")
			}()
		}
	}
	w.mu.Unlock()
	// A deadline generous for a loaded machine: 10 pods/s, and two minutes for the informers.
	deadline := 2*time.Minute + time.Duration(pods)*100*time.Millisecond
	err := harness.WaitFor(ctx, deadline, func(context.Context) (bool, error) {
		if procExited(cmd.Process.Pid) {
			return false, fmt.Errorf("the %s scheduler exited", profile)
		}
		return w.count() == pods, nil
	})
	if err != nil {
		t.Fatalf("%s: %d of %d pods bound: %v", profile, w.count(), pods, err)
	}
	cpu, err := procCPU(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	rss, err := procPeakRSS(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if dir != "" {
		if err := fetchProfile(ctx, port, "heap", dir, file+".heap.pprof"); err != nil {
			t.Errorf("heap profile of %s: %v", profile, err)
		}
		if err := <-profiled; err != nil {
			t.Errorf("CPU profile of %s: %v", profile, err)
		}
		t.Logf("%s: profiles in %s", profile, dir)
	}
	var sampled string
	if samples != nil {
		sampled = samples.stop()
	}
	kill()
	_ = cmd.Wait()
	if logDir != "" {
		w.mu.Lock()
		firstBind := w.first.Sub(started)
		w.mu.Unlock()
		saveSchedulerLog(t, logDir, file, label, out.String(), sampled, samples, firstBind)
	}

	w.mu.Lock()
	r := schedRun{Profile: profile, Pods: pods, CPU: cpu, WindowCPU: cpu - w.firstCPU, PeakRSS: rss, FirstBindLag: w.first.Sub(started)}
	if span := w.last.Sub(w.first); span > 0 && pods > 1 {
		r.PodsPerSec = float64(pods-1) / span.Seconds()
	}
	w.mu.Unlock()

	// The figure is printed before the clean-up, which a loaded apiserver may make slow.
	figure(t, "scheduler %s population=%s nodes=%d pods=%d: %.0f pods/s, CPU %.1fs (%.1fs while binding), peak RSS %.0f MiB, first bind %.1fs after start",
		label, pop, nodes, r.Pods, r.PodsPerSec, r.CPU.Seconds(), r.WindowCPU.Seconds(), mib(r.PeakRSS), r.FirstBindLag.Seconds())
	// Delete the pods; a DeleteCollection of thousands of pods can outlast the apiserver's request
	// timeout, so it is repeated until none is left.
	zero := int64(0)
	if err := harness.WaitFor(ctx, 10*time.Minute, func(ctx context.Context) (bool, error) {
		l, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1, LabelSelector: b.selector})
		if err != nil || len(l.Items) > 0 {
			if err := client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{LabelSelector: b.selector}); err != nil {
				t.Logf("deleting the pods of %s (retried): %v", ns, err)
			}
			return false, nil
		}
		return true, nil
	}); err != nil {
		t.Fatalf("pods of %s not deleted: %v", ns, err)
	}
	return r
}

// reservationLoad is what the accord-reservations contender runs with (ACCORD_SCALE_RESERVATIONS,
// "finished,live"): Finished reservations (Bound, Expired, Failed in turn, completed just now) and
// Live ones, Available on a node each, all in the namespace of the pods it binds, none of them
// naming those pods or their controllers.
type reservationLoad struct{ Finished, Live int }

func (l reservationLoad) String() string {
	return fmt.Sprintf("%d finished, %d live", l.Finished, l.Live)
}

// parseReservations parses "finished,live" (two non-negative integers, not both zero).
func parseReservations(v string) (reservationLoad, error) {
	var l reservationLoad
	parts := strings.Split(v, ",")
	if len(parts) != 2 {
		return l, fmt.Errorf("want finished,live (e.g. 1000,100)")
	}
	for i, dst := range []*int{&l.Finished, &l.Live} {
		n, err := strconv.Atoi(strings.TrimSpace(parts[i]))
		if err != nil || n < 0 {
			return l, fmt.Errorf("%q: want a non-negative integer", parts[i])
		}
		*dst = n
	}
	if l.Finished == 0 && l.Live == 0 {
		return l, fmt.Errorf("want at least one reservation")
	}
	return l, nil
}

// reservationRetention is the accord-reservations contender's --reservation-retention: longer than
// any round, so the collector deletes none of the finished reservations while it is measured.
const reservationRetention = "--reservation-retention=1h"

// liveReservationNode is the node live reservation i of live is meant for, spread over the nodes:
// one every nodes/live, moved on past the nodes the Accord profile rejects (control-plane-like, over
// a LoadAware threshold, with a stale NodeMetric).
func (p population) liveReservationNode(i, live, nodes int) int {
	k := i * nodes / live
	for n := 0; n < nodes && (p.controlPlane(k) || p.overCPU(k) || p.overMemory(k) || p.staleMetric(k)); n++ {
		k = (k + 1) % nodes
	}
	return k
}

// reservationOf is reservation i of the load in ns: the template is the population's pod i for
// accord-scheduler, the owners a pod and a controller of a workload being moved (moved-<i>, a UID no
// pending pod's controller has), with no owner reference (the collector checks only those).
func reservationOf(pop population, ns string, i int) *schedv1alpha1.Reservation {
	name := fmt.Sprintf("moved-%05d", i)
	pod := pop.podTemplate(ns, name, "accord-scheduler", i)
	return &schedv1alpha1.Reservation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: schedv1alpha1.ReservationSpec{
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: pod.Labels}, Spec: pod.Spec},
			Owners: []schedv1alpha1.ReservationOwner{
				{Pod: &schedv1alpha1.ReservationPodOwner{Name: name, UID: types.UID(fmt.Sprintf("00000000-0000-0001-0000-%012d", i))}},
				{Controller: &schedv1alpha1.ReservationControllerOwner{Kind: "ReplicaSet", Name: "moved", UID: types.UID(fmt.Sprintf("00000000-0000-0002-0000-%012d", i/10))}},
			},
			TTL: &metav1.Duration{Duration: schedv1alpha1.MaxReservationTTL},
		},
	}
}

// createReservations creates the load's reservations in ns before the accord-reservations run: the
// finished ones with their final status written (completionTime now), the live ones Pending, each
// with a required node affinity for its node (liveReservationNode), placed by accord-scheduler
// itself: bin with config (a profile with the Reservation plugin) runs until every live one is
// Available, then stops, before any pod of the run exists.
func createReservations(t *testing.T, ctx context.Context, accord accordclient.Interface, pop population, bin, config, ns string, load reservationLoad, nodes int) {
	t.Helper()
	start := time.Now()
	client := accord.SchedulingV1alpha1().Reservations(ns)
	if err := parallel(ctx, load.Finished, func(ctx context.Context, i int) error {
		r, err := client.Create(ctx, reservationOf(pop, ns, load.Live+i), metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating reservation %s/%s: %w", ns, reservationOf(pop, ns, load.Live+i).Name, err)
		}
		now := metav1.Now()
		expire := metav1.NewTime(r.CreationTimestamp.Add(schedv1alpha1.MaxReservationTTL))
		node := nodeName(pop.liveReservationNode(i, load.Finished, nodes))
		switch i % 3 {
		case 0:
			r.Status = schedv1alpha1.ReservationStatus{Phase: schedv1alpha1.ReservationBound, Reason: "Consumed", NodeName: node,
				Message: "pod " + r.Name + " was placed on " + node, ExpireTime: &expire,
				BoundPod: &schedv1alpha1.ReservationBoundPod{Name: r.Name, UID: types.UID(fmt.Sprintf("00000000-0000-0003-0000-%012d", i))}}
		case 1:
			r.Status = schedv1alpha1.ReservationStatus{Phase: schedv1alpha1.ReservationExpired, Reason: "TTLExpired", NodeName: node,
				Message: "no owner pod was placed on " + node + " within the TTL", ExpireTime: &expire}
		default:
			r.Status = schedv1alpha1.ReservationStatus{Phase: schedv1alpha1.ReservationFailed, Reason: "Unschedulable",
				Message: "0/1 nodes are available: 1 Insufficient cpu.", ExpireTime: &expire}
		}
		r.Status.CompletionTime = &now
		if _, err := client.UpdateStatus(ctx, r, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("writing the %s status of reservation %s/%s: %w", r.Status.Phase, ns, r.Name, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := parallel(ctx, load.Live, func(ctx context.Context, i int) error {
		r := reservationOf(pop, ns, i)
		node := nodeName(pop.liveReservationNode(i, load.Live, nodes))
		r.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}}}
		if _, err := client.Create(ctx, r, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating reservation %s/%s: %w", ns, r.Name, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if load.Live > 0 {
		pctx, stop := context.WithCancel(ctx)
		cmd, _ := harness.StartProcess(t, pctx, bin, "--config="+config, "--secure-port=0", reservationRetention)
		err := harness.WaitFor(ctx, 2*time.Minute+time.Duration(load.Live)*100*time.Millisecond, func(ctx context.Context) (bool, error) {
			if procExited(cmd.Process.Pid) {
				return false, fmt.Errorf("accord-scheduler placing the reservations exited")
			}
			available, _, err := countReservations(ctx, accord, ns, load.Live)
			return available == load.Live, err
		})
		stop()
		_ = cmd.Wait()
		if err != nil {
			t.Fatalf("placing %d reservations in %s: %v", load.Live, ns, err)
		}
	}
	t.Logf("accord-reservations: %s reservations in %s, the live ones placed by accord-scheduler, in %s", load, ns, time.Since(start).Round(time.Millisecond))
}

// countReservations counts the reservations of ns that are Available, and finished; one of the
// first live (those placed for the run, reservationOf 0 to live-1) that is finished is an error
// naming its reason and message.
func countReservations(ctx context.Context, accord accordclient.Interface, ns string, live int) (available, finished int, err error) {
	l, err := accord.SchedulingV1alpha1().Reservations(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, 0, err
	}
	for _, r := range l.Items {
		var i int
		if _, err := fmt.Sscanf(r.Name, "moved-%d", &i); err != nil {
			return 0, 0, fmt.Errorf("reservation %s/%s: not one of createReservations'", ns, r.Name)
		}
		switch {
		case r.Status.Phase == schedv1alpha1.ReservationAvailable:
			available++
		case r.Status.Phase.Finished() && i < live:
			return 0, 0, fmt.Errorf("live reservation %s/%s is %s (%s): %s", ns, r.Name, r.Status.Phase, r.Status.Reason, r.Status.Message)
		case r.Status.Phase.Finished():
			finished++
		}
	}
	return available, finished, nil
}

// checkReservations asserts that the load's reservations were all present, as created, during the
// run that just ended (none collected, expired, failed or consumed: the run measured what it says),
// then deletes them, so the next run starts without.
func checkReservations(t *testing.T, ctx context.Context, accord accordclient.Interface, ns string, load reservationLoad) {
	t.Helper()
	available, finished, err := countReservations(ctx, accord, ns, load.Live)
	if err != nil {
		t.Errorf("accord-reservations: %v", err)
	} else if available != load.Live || finished != load.Finished {
		t.Errorf("accord-reservations: after the run %d reservations of %s Available and %d finished, want %s", available, ns, finished, load)
	}
	client := accord.SchedulingV1alpha1().Reservations(ns)
	if err := harness.WaitFor(ctx, 5*time.Minute, func(ctx context.Context) (bool, error) {
		l, err := client.List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil || len(l.Items) > 0 {
			if err := client.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
				t.Logf("deleting the reservations of %s (retried): %v", ns, err)
			}
			return false, nil
		}
		return true, nil
	}); err != nil {
		t.Fatalf("reservations of %s not deleted: %v", ns, err)
	}
}

// buildBaseline builds accord-scheduler from the git revision rev (ACCORD_SCALE_BASELINE) in a
// temporary worktree of this repository, removed once built, and returns the binary and the
// revision's commit.
func buildBaseline(t *testing.T, rev string) (bin, commit string) {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test file")
	}
	repo := filepath.Join(filepath.Dir(file), "..", "..")
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	commit = git("rev-parse", "--verify", rev+"^{commit}")
	tmp, err := os.MkdirTemp("", "accord-baseline-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "src")
	git("worktree", "add", "--detach", dir, commit)
	defer git("worktree", "remove", "--force", dir)
	bin = filepath.Join(t.TempDir(), "accord-scheduler-baseline")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/scheduler")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/scheduler at %s (%s): %v\n%s", rev, commit, err, out)
	}
	return bin, commit
}

// spread is the min, median and max of xs (the mean of the two middle ones for an even count).
type spread struct{ min, median, max float64 }

func spreadOf(xs []float64) spread {
	if len(xs) == 0 {
		return spread{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return spread{s[0], m, s[len(s)-1]}
}

// f formats the spread as min/median/max with the verb (e.g. "%.2f").
func (s spread) f(verb string) string {
	return fmt.Sprintf(verb+"/"+verb+"/"+verb, s.min, s.median, s.max)
}

// over is the spread of fn over the runs.
func over(runs []schedRun, fn func(schedRun) float64) spread {
	xs := make([]float64, len(runs))
	for i, r := range runs {
		xs[i] = fn(r)
	}
	return spreadOf(xs)
}

// overPairs is the spread of fn over the rounds' pairs (a[i], b[i]): each round's ratio, so that what
// moves both runs of a round (the machine's load, the apiserver) cancels out.
func overPairs(a, b []schedRun, fn func(a, b schedRun) float64) spread {
	xs := make([]float64, len(a))
	for i := range a {
		xs[i] = fn(a[i], b[i])
	}
	return spreadOf(xs)
}

// cpuPerPod is the run's CPU per pod in ms (whole process; window: while binding).
func cpuPerPod(r schedRun, window bool) float64 {
	if window {
		return r.WindowCPU.Seconds() * 1000 / float64(r.Pods)
	}
	return r.CPU.Seconds() * 1000 / float64(r.Pods)
}

// schedulerKnobs reads the scheduler half's knobs into s: ACCORD_SCALE_ROUNDS (interleaved rounds,
// default 3), ACCORD_SCALE_BASELINE (a git revision whose accord-scheduler is a third contender) and
// ACCORD_SCALE_RESERVATIONS ("finished,live": the accord-reservations contender; empty: none).
func schedulerKnobs(t *testing.T, s *size) {
	t.Helper()
	s.Rounds = envInt(t, "ACCORD_SCALE_ROUNDS", 3)
	s.Baseline = os.Getenv("ACCORD_SCALE_BASELINE")
	if v := os.Getenv("ACCORD_SCALE_RESERVATIONS"); v != "" {
		var err error
		if s.Reservations, err = parseReservations(v); err != nil {
			t.Fatalf("ACCORD_SCALE_RESERVATIONS=%q: %v", v, err)
		}
	}
}

// rssSamples samples a process's VmRSS every 20 ms from start until stop: the samples (seconds since
// start, bytes) and when the largest was taken.
type rssSamples struct {
	done   chan struct{}
	result chan string
	peak   int64
	peakAt time.Duration
}

func sampleRSS(pid int, start time.Time) *rssSamples {
	s := &rssSamples{done: make(chan struct{}), result: make(chan string, 1)}
	go func() {
		var b strings.Builder
		for {
			if v, err := procRSS(pid); err == nil {
				at := time.Since(start)
				fmt.Fprintf(&b, "%.3f\t%d\n", at.Seconds(), v)
				if v > s.peak {
					s.peak, s.peakAt = v, at
				}
			}
			select {
			case <-s.done:
				s.result <- b.String()
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return s
}

// stop ends the sampling and returns the samples (after it, peak and peakAt are final).
func (s *rssSamples) stop() string {
	close(s.done)
	return <-s.result
}

// saveSchedulerLog writes a scheduler run's log (with gctrace) and RSS samples to dir/<file>.log and
// .rss.tsv (ACCORD_SCALE_SCHEDULER_LOG_DIR) and logs when the sampled RSS peaked, against the first
// bind, and the largest heap a collection marked and the heap peak from gctrace.
func saveSchedulerLog(t *testing.T, dir, file, label, log, sampled string, s *rssSamples, firstBind time.Duration) {
	t.Helper()
	base := filepath.Join(dir, file)
	if err := os.WriteFile(base+".log", []byte(log), 0o600); err != nil {
		t.Errorf("saving the %s log: %v", label, err)
	}
	if err := os.WriteFile(base+".rss.tsv", []byte(sampled), 0o600); err != nil {
		t.Errorf("saving the %s RSS samples: %v", label, err)
	}
	live, peak, peakAt := gcHeaps(log)
	t.Logf("%s: sampled RSS peaked at %.0f MiB %.1fs after start (first bind %.1fs); largest marked heap %.0f MiB, heap peak %.0f MiB (collection at %.1fs), %d collections; log and RSS samples in %s.{log,rss.tsv}",
		label, mib(s.peak), s.peakAt.Seconds(), firstBind.Seconds(), mib(live), mib(peak), peakAt.Seconds(), strings.Count(log, "\ngc "), base)
}
