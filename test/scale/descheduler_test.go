package scale

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/accord-sched/accord/test/harness"
)

// deschedulerPolicy is the upstream Helm chart's default profile (its plugins and their args), with
// DefaultEvictor's nodeFit on, plus Accord's NodeCRDResourceFit (Deschedule) and SchedulerSimulation
// (PreEvictionFilter, simulating accord-scheduler's configuration). limits is prepended: empty
// leaves the safe default caps.
const deschedulerPolicy = `apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
%s
profiles:
- name: default
  pluginConfig:
  - name: DefaultEvictor
    args:
      ignorePvcPods: true
      evictLocalStoragePods: true
      nodeFit: true
      missingCRPolicy: Reject
  - name: RemoveDuplicates
  - name: RemovePodsHavingTooManyRestarts
    args:
      podRestartThreshold: 100
      includingInitContainers: true
  - name: RemovePodsViolatingNodeAffinity
    args:
      nodeAffinityType: [requiredDuringSchedulingIgnoredDuringExecution]
  - name: RemovePodsViolatingNodeTaints
  - name: RemovePodsViolatingInterPodAntiAffinity
  - name: RemovePodsViolatingTopologySpreadConstraint
  - name: LowNodeUtilization
    args:
      thresholds: {cpu: 20, memory: 20, pods: 20}
      targetThresholds: {cpu: 50, memory: 50, pods: 50}
  - name: NodeCRDResourceFit
    args:
      missingCRPolicy: Reject
      schedulerNames: [accord-scheduler]
  plugins:
    filter:
      enabled: [DefaultEvictor]
    preEvictionFilter:
      enabled: [DefaultEvictor, SchedulerSimulation]
    deschedule:
      enabled: [RemovePodsHavingTooManyRestarts, RemovePodsViolatingNodeTaints, RemovePodsViolatingNodeAffinity, RemovePodsViolatingInterPodAntiAffinity, NodeCRDResourceFit]
    balance:
      enabled: [RemoveDuplicates, RemovePodsViolatingTopologySpreadConstraint, LowNodeUtilization]
`

// deschedRun is what one descheduler cycle measured.
type deschedRun struct {
	Variant   string
	Wall      time.Duration // process start to exit: start-up, informer sync, the cycle
	Cycle     time.Duration // the cycle, from its "Descheduling cycle done" log line
	Simulated int           // candidates SchedulerSimulation decided on (admitted + blocked)
	Admitted  int
	// Simulation is the time the simulations took, summed over the candidates (their decision
	// lines' simulation field).
	Simulation time.Duration
	DryRun     int // "Dry run: would evict pod" lines
	CPU        time.Duration
	PeakRSS    int64
	// GCs is the number of garbage collections (from GODEBUG=gctrace=1) that started during the
	// cycle, and GCMark their concurrent mark phases' wall time, during which the collector takes a
	// quarter of the CPUs and the code that allocates pays mark assists.
	GCs    int
	GCMark time.Duration
	// LiveHeap is the largest heap a collection found live (gctrace's third figure), HeapPeak the
	// largest heap a collection started or ended at (its first two): RSS is HeapPeak plus what the
	// runtime has not returned to the OS, stacks and the runtime's own memory.
	LiveHeap, HeapPeak int64
	// GOGC is the run's GOGC ("default": unset, the binary's own).
	GOGC string
	// When, since the process started, the peak RSS was reached (VmHWM sampled every 20 ms), the
	// informers had synced (the "Descheduler started" line), the cycle started and ended, and the
	// collection with the largest heap (HeapPeak) started: where the peak is.
	PeakAt, SyncedAt, CycleStart, CycleEnd, HeapPeakAt time.Duration
	// Candidates are the pods (namespace/name) SchedulerSimulation decided on, each once, in order.
	Candidates []string
	// CapSkippedFrom is the plugin the runtime skipped first once the total cap was reached, and
	// every one after it (empty: the cap was not reached before the last plugin).
	CapSkippedFrom string
}

var (
	cycleDone  = regexp.MustCompile(`"Descheduling cycle done" duration="([^"]+)"`)
	candidate  = regexp.MustCompile(`"Eviction (?:admitted|blocked) by the scheduler simulation".* pod="([^"]+)"`)
	capSkipped = regexp.MustCompile(`"Total eviction cap reached; the cycle's remaining plugins are not run".* nextPlugin="([^"]+)"`)
	simulation = regexp.MustCompile(`"Eviction (?:admitted|blocked) by the scheduler simulation".* simulation="([^"]+)"`)
	// klogTime is the time in a klog text header (local time, no year); gcLine a gctrace line: its
	// start, seconds since the process started, and its wall clock phases in ms.
	klogTime = regexp.MustCompile(`^[IWEF](\d{4} \d{2}:\d{2}:\d{2}\.\d{6})`)
	gcLine   = regexp.MustCompile(`^gc \d+ @([0-9.]+)s [0-9]+%: ([0-9.]+)\+([0-9.]+)\+([0-9.]+) ms clock`)
	gcHeap   = regexp.MustCompile(`^gc \d+ @([0-9.]+)s .*, ([0-9]+)->([0-9]+)->([0-9]+) MB`)
)

// gcsInCycle counts the gctrace lines of log whose collection started during the cycle that ended
// with the "Descheduling cycle done" line (its klog time less its duration, against the process's
// start), and sums their mark phases.
func gcsInCycle(log string, processStart time.Time, cycle time.Duration) (int, time.Duration) {
	end, ok := logTime(log, `"Descheduling cycle done"`, processStart)
	if !ok {
		return 0, 0
	}
	from, to := (end - cycle).Seconds(), end.Seconds()
	n, mark := 0, time.Duration(0)
	for _, line := range strings.Split(log, "\n") {
		m := gcLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		at, _ := strconv.ParseFloat(m[1], 64)
		if at < from || at > to {
			continue
		}
		ms, _ := strconv.ParseFloat(m[3], 64)
		n++
		mark += time.Duration(ms * float64(time.Millisecond))
	}
	return n, mark
}

// logTime returns when the first line of log that contains marker was logged (its klog header's
// local time, in the process's year), since processStart; false if no line has it.
func logTime(log, marker string, processStart time.Time) (time.Duration, bool) {
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, marker) {
			continue
		}
		m := klogTime.FindStringSubmatch(line)
		if m == nil {
			return 0, false
		}
		t, err := time.ParseInLocation("0102 15:04:05.000000", m[1], time.Local)
		if err != nil {
			return 0, false
		}
		return t.AddDate(processStart.Year(), 0, 0).Sub(processStart), true
	}
	return 0, false
}

// gcHeaps returns, over the gctrace lines of log, the largest live heap a collection marked and
// the largest heap one started or ended at, in bytes, and when (since the process started) the
// first collection at that largest heap started.
func gcHeaps(log string) (live, peak int64, peakAt time.Duration) {
	for _, line := range strings.Split(log, "\n") {
		m := gcHeap.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		at, _ := strconv.ParseFloat(m[1], 64)
		start, _ := strconv.ParseInt(m[2], 10, 64)
		end, _ := strconv.ParseInt(m[3], 10, 64)
		marked, _ := strconv.ParseInt(m[4], 10, 64)
		live = max(live, marked<<20)
		if h := max(start, end) << 20; h > peak {
			peak, peakAt = h, time.Duration(at*float64(time.Second))
		}
	}
	return live, peak, peakAt
}

// phase names the part of the run that at (since the process started) falls in.
func (r deschedRun) phase(at time.Duration) string {
	switch {
	case r.SyncedAt == 0 || at < r.SyncedAt:
		return "start-up and informer sync"
	case at < r.CycleStart:
		return "after the sync, before the cycle"
	case at <= r.CycleEnd:
		return "during the cycle"
	default:
		return "after the cycle"
	}
}

// runDescheduler runs accord-descheduler for one dry-run cycle with the policy (limits prepended),
// the scheduler configuration it simulates and GOGC (deschedulerEnv), and measures it from its log
// and its rusage. With ACCORD_SCALE_DESCHEDULER_LOG_DIR set it saves there the process's log (with
// gctrace) and its RSS every 20 ms (seconds since start, VmRSS bytes), for looking at.
func runDescheduler(t *testing.T, ctx context.Context, bin, kubeconfig, schedulerConfig, variant, limits, gogc string) deschedRun {
	t.Helper()
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policy, []byte(fmt.Sprintf(deschedulerPolicy, limits)), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--kubeconfig="+kubeconfig, "--policy-config-file="+policy,
		"--scheduler-config-file="+schedulerConfig, "--descheduling-interval=0", "--dry-run", "--secure-port=0",
		"--client-connection-qps=5000", "--client-connection-burst=5000", "-v=2")
	cmd.Env = append(deschedulerEnv(gogc), "GODEBUG=gctrace=1")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Peak RSS is VmHWM, sampled until the process exits (rusage's maxrss is no use here: exec
	// keeps the high-water mark of the test process, whose memory the child shared until exec).
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	logDir := os.Getenv("ACCORD_SCALE_DESCHEDULER_LOG_DIR")
	var rss int64
	var peakAt time.Duration
	var samples strings.Builder
	var err error
	for done := false; !done; {
		if v, perr := procPeakRSS(cmd.Process.Pid); perr == nil && v > rss {
			rss, peakAt = v, time.Since(start)
		}
		if logDir != "" {
			if v, perr := procRSS(cmd.Process.Pid); perr == nil {
				fmt.Fprintf(&samples, "%.3f\t%d\n", time.Since(start).Seconds(), v)
			}
		}
		select {
		case err = <-exited:
			done = true
		case <-time.After(20 * time.Millisecond):
		}
	}
	wall := time.Since(start)
	out := buf.Bytes()
	if logDir != "" {
		base := filepath.Join(logDir, fmt.Sprintf("descheduler-%s-GOGC-%s-%s", variant, gogc, start.Format("150405")))
		if werr := os.WriteFile(base+".log", out, 0o600); werr != nil {
			t.Errorf("saving the descheduler's log: %v", werr)
		}
		if werr := os.WriteFile(base+".rss.tsv", []byte(samples.String()), 0o600); werr != nil {
			t.Errorf("saving the descheduler's RSS samples: %v", werr)
		}
		t.Logf("descheduler (%s, GOGC %s): log and RSS samples in %s.{log,rss.tsv}", variant, gogc, base)
	}
	if err != nil {
		t.Fatalf("accord-descheduler (%s): %v\n%s", variant, err, tail(out, 60))
	}
	r := deschedRun{Variant: variant, GOGC: gogc, Wall: wall, PeakRSS: rss, PeakAt: peakAt, CPU: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
	log := string(out)
	m := cycleDone.FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("accord-descheduler (%s) logged no completed cycle:\n%s", variant, tail(out, 60))
	}
	if r.Cycle, err = time.ParseDuration(m[1]); err != nil {
		t.Fatalf("cycle duration %q: %v", m[1], err)
	}
	r.GCs, r.GCMark = gcsInCycle(log, start, r.Cycle)
	r.LiveHeap, r.HeapPeak, r.HeapPeakAt = gcHeaps(log)
	r.SyncedAt, _ = logTime(log, `"Descheduler started"`, start)
	if end, ok := logTime(log, `"Descheduling cycle done"`, start); ok {
		r.CycleStart, r.CycleEnd = end-r.Cycle, end
	}
	r.Admitted = strings.Count(log, `"Eviction admitted by the scheduler simulation"`)
	r.Simulated = r.Admitted + strings.Count(log, `"Eviction blocked by the scheduler simulation"`)
	r.DryRun = strings.Count(log, `"Dry run: would evict pod"`)
	// A pod can be simulated more than once in a cycle (by two plugins, or blocked and later
	// admitted); the copies for kube-scheduler need one per pod.
	seen := map[string]bool{}
	for _, m := range candidate.FindAllStringSubmatch(log, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			r.Candidates = append(r.Candidates, m[1])
		}
	}
	if m := capSkipped.FindStringSubmatch(log); m != nil {
		r.CapSkippedFrom = m[1]
	}
	for _, m := range simulation.FindAllStringSubmatch(log, -1) {
		d, err := time.ParseDuration(m[1])
		if err != nil {
			t.Fatalf("simulation duration %q: %v", m[1], err)
		}
		r.Simulation += d
	}
	return r
}

// deschedulerEnv is the environment accord-descheduler runs with: the test's without its GOGC, with
// GOGC=gogc unless gogc is "default" (then the binary's own, app.DefaultGCPercent, applies), and with
// GOMEMLIMIT set to ACCORD_SCALE_DESCHEDULER_GOMEMLIMIT when that is set (as the Helm chart sets it
// from the container's memory limit; the test process, which holds the control plane, keeps none).
func deschedulerEnv(gogc string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GOGC=") })
	if gogc != "default" {
		env = append(env, "GOGC="+gogc)
	}
	if v := os.Getenv("ACCORD_SCALE_DESCHEDULER_GOMEMLIMIT"); v != "" {
		env = append(env, "GOMEMLIMIT="+v)
	}
	return env
}

// deschedulerGOGCs are the GOGC values of ACCORD_SCALE_DESCHEDULER_GOGC (comma-separated; default
// "default", the binary's own): TestScale runs a dry-run cycle with each, TestDeschedulerEvent with
// the first.
func deschedulerGOGCs(t *testing.T) []string {
	t.Helper()
	v := os.Getenv("ACCORD_SCALE_DESCHEDULER_GOGC")
	if v == "" {
		return []string{"default"}
	}
	var out []string
	for _, g := range strings.Split(v, ",") {
		g = strings.TrimSpace(g)
		if n, err := strconv.Atoi(g); g != "default" && g != "off" && (err != nil || n <= 0) {
			t.Fatalf("ACCORD_SCALE_DESCHEDULER_GOGC=%q: %q is not default, off or a positive percentage", v, g)
		}
		out = append(out, g)
	}
	return out
}

// deschedulerGC describes the descheduler's GOMEMLIMIT and GOGC for a FIGURE line.
func deschedulerGC(gogc string) string {
	limit := "no GOMEMLIMIT"
	if v := os.Getenv("ACCORD_SCALE_DESCHEDULER_GOMEMLIMIT"); v != "" {
		limit = "GOMEMLIMIT=" + v
	}
	if gogc == "default" {
		return limit + ", GOGC unset"
	}
	return limit + ", GOGC=" + gogc
}

// tail returns the last n lines of out.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// profileDescheduler runs accord-descheduler with the policy (default caps) in interval mode with
// --profiling, takes a CPU profile from its start (ACCORD_SCALE_PPROF_FROM=cycle: from its "Descheduler
// started" line, when its first cycle begins, with an execution trace as long, descheduler.trace)
// and, once its first cycle is done, a heap profile after a collection, so in-use is the live heap
// (dir/descheduler.{cpu,heap}.pprof), then stops it. For looking at; it measures nothing.
func profileDescheduler(t *testing.T, ctx context.Context, bin, kubeconfig, schedulerConfig, dir, gogc string) {
	t.Helper()
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policy, []byte(fmt.Sprintf(deschedulerPolicy, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	port := harness.FreePort(t)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--kubeconfig="+kubeconfig, "--policy-config-file="+policy,
		"--scheduler-config-file="+schedulerConfig, "--descheduling-interval=1h", "--dry-run",
		"--client-connection-qps=5000", "--client-connection-burst=5000", "-v=1",
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port), "--profiling",
		"--authorization-always-allow-paths=/healthz,/readyz,/livez,/debug/pprof/*")
	cmd.Env = deschedulerEnv(gogc)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// ACCORD_SCALE_PPROF_FROM=cycle: the CPU profile, and an execution trace as long, start when the
	// descheduler logs that its caches synced (its first cycle starts then), not at its start.
	fromCycle := os.Getenv("ACCORD_SCALE_PPROF_FROM") == "cycle"
	done, started := make(chan struct{}), make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		closed, synced := false, false
		for sc.Scan() {
			if !synced && strings.Contains(sc.Text(), `"Descheduler started"`) {
				close(started)
				synced = true
			}
			if !closed && strings.Contains(sc.Text(), `"Descheduling cycle done"`) {
				close(done)
				closed = true
			}
		}
		if !synced {
			close(started)
		}
		if !closed {
			close(done)
		}
	}()
	seconds := int(profileSeconds(t).Seconds())
	cpu, trace := make(chan error, 1), make(chan error, 1)
	go func() {
		if fromCycle {
			<-started
		}
		// The endpoint is up once serving starts, shortly after the process does.
		var err error
		for i := 0; i < 50; i++ {
			if err = fetchProfile(ctx, port, fmt.Sprintf("profile?seconds=%d", seconds), dir, "descheduler.cpu.pprof"); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		cpu <- err
	}()
	go func() {
		if !fromCycle {
			trace <- nil
			return
		}
		<-started
		trace <- fetchProfile(ctx, port, fmt.Sprintf("trace?seconds=%d", seconds), dir, "descheduler.trace")
	}()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("accord-descheduler: no cycle done")
	}
	if err := fetchProfile(ctx, port, "heap?gc=1", dir, "descheduler.heap.pprof"); err != nil {
		t.Errorf("descheduler heap profile: %v", err)
	}
	if err := <-cpu; err != nil {
		t.Errorf("descheduler CPU profile: %v", err)
	}
	if err := <-trace; err != nil {
		t.Errorf("descheduler execution trace: %v", err)
	}
	t.Logf("descheduler: profiles in %s", dir)
}

// TestGCsInCycle: only the collections that start inside the cycle count, their mark phases summed.
func TestGCsInCycle(t *testing.T) {
	start := time.Date(2026, 11, 26, 3, 0, 0, 0, time.Local)
	log := strings.Join([]string{
		"gc 1 @0.500s 2%: 0.1+20+0.05 ms clock, 0.2+1/2/3+0.1 ms cpu, 10->12->6 MB, 12 MB goal, 2 P",
		"gc 2 @9.100s 3%: 0.1+45.5+0.05 ms clock, 0.2+1/2/3+0.1 ms cpu, 300->310->150 MB, 320 MB goal, 2 P",
		"gc 3 @9.900s 3%: 0.2+30+0.1 ms clock, 0.2+1/2/3+0.1 ms cpu, 300->310->150 MB, 320 MB goal, 2 P",
		`I1126 03:00:10.000000   42 runtime.go:473] "Descheduling cycle done" duration="1.5s" nodes=5000 evictions=50`,
		"gc 4 @10.500s 3%: 0.1+99+0.05 ms clock, 0.2+1/2/3+0.1 ms cpu, 300->310->150 MB, 320 MB goal, 2 P",
	}, "\n")
	n, mark := gcsInCycle(log, start, 1500*time.Millisecond)
	if n != 2 || mark != 75500*time.Microsecond {
		t.Fatalf("gcsInCycle = %d, %v; want 2 collections and 75.5ms of marking", n, mark)
	}
	if live, peak, at := gcHeaps(log); live != 150<<20 || peak != 310<<20 || at != 9100*time.Millisecond {
		t.Fatalf("gcHeaps = %d, %d at %v; want 150 MiB live and a 310 MiB peak, first at 9.1s", live, peak, at)
	}
	if at, ok := logTime(log, `"Descheduling cycle done"`, start); !ok || at != 10*time.Second {
		t.Fatalf("logTime of the cycle's end = %v, %v; want 10s", at, ok)
	}
	r := deschedRun{SyncedAt: 2 * time.Second, CycleStart: 8500 * time.Millisecond, CycleEnd: 10 * time.Second}
	for at, want := range map[time.Duration]string{time.Second: "start-up and informer sync", 3 * time.Second: "after the sync, before the cycle",
		9 * time.Second: "during the cycle", 11 * time.Second: "after the cycle"} {
		if got := r.phase(at); got != want {
			t.Errorf("phase(%v) = %q, want %q", at, got, want)
		}
	}
	if n, _ := gcsInCycle("no cycle", start, time.Second); n != 0 {
		t.Fatalf("without a cycle line: %d collections", n)
	}
}
