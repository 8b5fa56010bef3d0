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
}

var (
	cycleDone  = regexp.MustCompile(`"Descheduling cycle done" duration="([^"]+)"`)
	simulation = regexp.MustCompile(`"Eviction (?:admitted|blocked) by the scheduler simulation".* simulation="([^"]+)"`)
)

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
	r.Admitted = strings.Count(log, `"Eviction admitted by the scheduler simulation"`)
	r.Simulated = r.Admitted + strings.Count(log, `"Eviction blocked by the scheduler simulation"`)
	r.DryRun = strings.Count(log, `"Dry run: would evict pod"`)
	for _, m := range simulation.FindAllStringSubmatch(log, -1) {
		d, err := time.ParseDuration(m[1])
		if err != nil {
			t.Fatalf("simulation duration %q: %v", m[1], err)
		}
		r.Simulation += d
	}
	return r
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
// (dir/descheduler.{cpu,heap}.pprof), then stops it. For looking at; it measures nothing.
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
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port), "--profiling")
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
	if err := fetchProfile(ctx, port, "heap", dir, "descheduler.heap.pprof"); err != nil {
		t.Errorf("descheduler heap profile: %v", err)
	}
	if err := <-cpu; err != nil {
		t.Errorf("descheduler CPU profile: %v", err)
	}
	t.Logf("descheduler: profiles in %s", dir)
}
