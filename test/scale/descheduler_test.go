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
	gcHeap   = regexp.MustCompile(`^gc \d+ @.*, ([0-9]+)->([0-9]+)->([0-9]+) MB`)
)

// gcsInCycle counts the gctrace lines of log whose collection started during the cycle that ended
// with the "Descheduling cycle done" line (its klog time less its duration, against the process's
// start), and sums their mark phases.
func gcsInCycle(log string, processStart time.Time, cycle time.Duration) (int, time.Duration) {
	var end time.Time
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, `"Descheduling cycle done"`) {
			continue
		}
		if m := klogTime.FindStringSubmatch(line); m != nil {
			if t, err := time.ParseInLocation("0102 15:04:05.000000", m[1], time.Local); err == nil {
				end = t.AddDate(processStart.Year(), 0, 0)
			}
		}
		break
	}
	if end.IsZero() {
		return 0, 0
	}
	from, to := end.Add(-cycle).Sub(processStart).Seconds(), end.Sub(processStart).Seconds()
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

// gcHeaps returns, over the gctrace lines of log, the largest live heap a collection marked and
// the largest heap one started or ended at, in bytes.
func gcHeaps(log string) (live, peak int64) {
	for _, line := range strings.Split(log, "\n") {
		m := gcHeap.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		start, _ := strconv.ParseInt(m[1], 10, 64)
		end, _ := strconv.ParseInt(m[2], 10, 64)
		marked, _ := strconv.ParseInt(m[3], 10, 64)
		live, peak = max(live, marked<<20), max(peak, start<<20, end<<20)
	}
	return live, peak
}

// runDescheduler runs accord-descheduler for one dry-run cycle with the policy (limits prepended)
// and the scheduler configuration it simulates, and measures it from its log and its rusage.
func runDescheduler(t *testing.T, ctx context.Context, bin, kubeconfig, schedulerConfig, variant, limits string) deschedRun {
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
	cmd.Env = append(deschedulerEnv(), "GODEBUG=gctrace=1")
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
	var rss int64
	var err error
	for done := false; !done; {
		if v, perr := procPeakRSS(cmd.Process.Pid); perr == nil {
			rss = v
		}
		select {
		case err = <-exited:
			done = true
		case <-time.After(20 * time.Millisecond):
		}
	}
	wall := time.Since(start)
	out := buf.Bytes()
	if err != nil {
		t.Fatalf("accord-descheduler (%s): %v\n%s", variant, err, tail(out, 60))
	}
	r := deschedRun{Variant: variant, Wall: wall, PeakRSS: rss, CPU: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
	log := string(out)
	m := cycleDone.FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("accord-descheduler (%s) logged no completed cycle:\n%s", variant, tail(out, 60))
	}
	if r.Cycle, err = time.ParseDuration(m[1]); err != nil {
		t.Fatalf("cycle duration %q: %v", m[1], err)
	}
	r.GCs, r.GCMark = gcsInCycle(log, start, r.Cycle)
	r.LiveHeap, r.HeapPeak = gcHeaps(log)
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

// deschedulerEnv is the environment accord-descheduler runs with: the test's, with GOMEMLIMIT set to
// ACCORD_SCALE_DESCHEDULER_GOMEMLIMIT when that is set (as the Helm chart sets it from the
// container's memory limit; the test process, which holds the control plane, keeps none).
func deschedulerEnv() []string {
	env := os.Environ()
	if v := os.Getenv("ACCORD_SCALE_DESCHEDULER_GOMEMLIMIT"); v != "" {
		env = append(env, "GOMEMLIMIT="+v)
	}
	return env
}

// deschedulerMemLimit describes the descheduler's GOMEMLIMIT for a FIGURE line.
func deschedulerMemLimit() string {
	if v := os.Getenv("ACCORD_SCALE_DESCHEDULER_GOMEMLIMIT"); v != "" {
		return "GOMEMLIMIT=" + v
	}
	return "no GOMEMLIMIT"
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
// --profiling, takes a CPU profile from its start and, once its first cycle is done, a heap profile
// after a collection, so in-use is the live heap (dir/descheduler.{cpu,heap}.pprof), then stops it.
// For looking at; it measures nothing.
func profileDescheduler(t *testing.T, ctx context.Context, bin, kubeconfig, schedulerConfig, dir string) {
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
	cmd.Env = deschedulerEnv()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	done := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		closed := false
		for sc.Scan() {
			if !closed && strings.Contains(sc.Text(), `"Descheduling cycle done"`) {
				close(done)
				closed = true
			}
		}
		if !closed {
			close(done)
		}
	}()
	cpu := make(chan error, 1)
	go func() {
		// The endpoint is up once serving starts, shortly after the process does.
		var err error
		for i := 0; i < 50; i++ {
			if err = fetchProfile(ctx, port, fmt.Sprintf("profile?seconds=%d", int(profileSeconds(t).Seconds())), dir, "descheduler.cpu.pprof"); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		cpu <- err
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
	if live, peak := gcHeaps(log); live != 150<<20 || peak != 310<<20 {
		t.Fatalf("gcHeaps = %d, %d; want 150 MiB live and a 310 MiB peak", live, peak)
	}
	if n, _ := gcsInCycle("no cycle", start, time.Second); n != 0 {
		t.Fatalf("without a cycle line: %d collections", n)
	}
}
