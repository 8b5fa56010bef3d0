package reliability

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/accord-sched/accord/test/harness"
)

// shippedLeaseFlags returns the --leader-elect-{lease-duration,renew-deadline,retry-period} flags of
// the descheduler Deployment in manifests/, so the case runs with the settings users get.
func shippedLeaseFlags(t testing.TB) []string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	data, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "manifests", "descheduler", "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var flags []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "- "))
		for _, f := range []string{"--leader-elect-lease-duration=", "--leader-elect-renew-deadline=", "--leader-elect-retry-period="} {
			if strings.HasPrefix(line, f) {
				flags = append(flags, line)
			}
		}
	}
	if len(flags) != 3 {
		t.Fatalf("manifests/descheduler/deployment.yaml sets %v, want the three lease timings", flags)
	}
	return flags
}

// leaseTiming reads the lease duration and retry period out of --leader-elect-* flags.
func leaseTiming(t testing.TB, flags []string) (lease, retry time.Duration) {
	t.Helper()
	for _, f := range flags {
		name, value, _ := strings.Cut(f, "=")
		d, err := time.ParseDuration(value)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		switch name {
		case "--leader-elect-lease-duration":
			lease = d
		case "--leader-elect-retry-period":
			retry = d
		}
	}
	return lease, retry
}

// takeoverBound is the longest a follower may take to replace a crashed leader: the Lease must
// expire (lease duration after the last renewal), then the follower's next try comes within a
// jittered retry period (client-go jitters it by up to 1.2x); 5 s more for process scheduling on a
// busy test machine.
func takeoverBound(lease, retry time.Duration) time.Duration {
	return lease + retry*12/10 + 5*time.Second
}

// replica is one accord-descheduler (or accord-scheduler) process; its log lines are kept with the time they were read.
type replica struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}

	mu    sync.Mutex
	lines []logLine
}

type logLine struct {
	at   time.Time
	text string
}

func startReplica(t testing.TB, bin, name string, args ...string) *replica {
	t.Helper()
	r := &replica{name: name, done: make(chan struct{})}
	r.cmd = exec.Command(bin, args...)
	stderr, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	r.cmd.Stdout = nil
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(r.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			r.mu.Lock()
			r.lines = append(r.lines, logLine{at: time.Now(), text: sc.Text()})
			r.mu.Unlock()
		}
		_ = r.cmd.Wait()
	}()
	t.Cleanup(func() { r.stop(t, syscall.SIGKILL) })
	return r
}

// stop sends sig and waits (at most 30 s) for the process to exit.
func (r *replica) stop(t testing.TB, sig syscall.Signal) {
	select {
	case <-r.done:
		return
	default:
	}
	_ = r.cmd.Process.Signal(sig)
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
		t.Errorf("replica %s did not exit within 30s of %v", r.name, sig)
	}
}

// times returns when the lines matching re were read.
func (r *replica) times(re *regexp.Regexp) []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Time
	for _, l := range r.lines {
		if re.MatchString(l.text) {
			out = append(out, l.at)
		}
	}
	return out
}

func (r *replica) matching(re *regexp.Regexp) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, l := range r.lines {
		if m := re.FindStringSubmatch(l.text); m != nil {
			out = append(out, m[len(m)-1])
		}
	}
	return out
}

// tail returns the last n lines of the replica's log.
func (r *replica) tail(n int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, l := range r.lines[max(0, len(r.lines)-n):] {
		out = append(out, l.text)
	}
	return strings.Join(out, "\n")
}

var (
	leadingRE = regexp.MustCompile(`Leading; starting" component="accord-descheduler"`)
	cycleRE   = regexp.MustCompile(`Descheduling cycle done`)
	evictedRE = regexp.MustCompile(`"Evicted pod" .*?\bpod="([^"]+)"`)
)

// Two accord-descheduler replicas (the real binary) share one Lease with the lease timing the
// manifests ship. The leader is killed (SIGKILL: it cannot release the Lease) and then, after the
// follower took over and a third replica joined, the new leader is stopped cleanly (SIGTERM: it
// releases the Lease). The takeover times are the figures; cycles never run on two replicas at once
// (no cycle of the new leader before the old one died) and no pod is evicted twice.
func TestDeschedulerLeaderFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the descheduler binary")
	}
	ctx := context.Background()
	bin := harness.BuildBinary(t, "github.com/accord-sched/accord/cmd/descheduler")
	c := newCluster(t, "failover", "n1", "n2")
	// Pods PodLifeTime evicts as soon as they run, one per node and cycle, so evictions go on through
	// the failovers; nothing recreates them, so each can be evicted once, and a second eviction of
	// one would show in the logs.
	var ps []*corev1.Pod
	for i := range 40 {
		ps = append(ps, c.newPod("p"+itoa(i), c.nodes[i%2], nil))
	}
	c.create(ps...)
	policy := c.writePolicy("maxNoOfPodsToEvictPerNode: 1\nprofiles:\n" + profile("failover", "PodLifeTime", "states: [Running]"))
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	const lease = "accord-descheduler"
	args := append([]string{
		"--kubeconfig=" + kubeconfig, "--policy-config-file=" + policy, "--descheduling-interval=1s",
		"--leader-elect=true", "--leader-elect-resource-namespace=" + c.ns, "--leader-elect-resource-name=" + lease,
		"--secure-port=0", "--v=2",
	}, shippedLeaseFlags(t)...)

	holder := func(ctx context.Context) string {
		l, err := env.Client.CoordinationV1().Leases(c.ns).Get(ctx, lease, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	waitLeading := func(r *replica, within time.Duration) time.Time {
		t.Helper()
		var at time.Time
		if err := harness.WaitFor(ctx, within, func(context.Context) (bool, error) {
			if ts := r.times(leadingRE); len(ts) > 0 {
				at = ts[0]
				return true, nil
			}
			return false, nil
		}); err != nil {
			t.Fatalf("replica %s not leading within %s (lease held by %q)", r.name, within, holder(ctx))
		}
		return at
	}

	a := startReplica(t, bin, "a", args...)
	waitLeading(a, 60*time.Second)
	b := startReplica(t, bin, "b", args...)
	// Let the leader run cycles (and evict) while the follower waits.
	if err := harness.WaitFor(ctx, 30*time.Second, func(context.Context) (bool, error) {
		return len(a.times(cycleRE)) >= 2, nil
	}); err != nil {
		t.Fatalf("leader ran %d cycles", len(a.times(cycleRE)))
	}
	if n := len(b.times(leadingRE)); n != 0 {
		t.Fatalf("follower leads while the leader lives")
	}

	// Crash: SIGKILL, the Lease stays held until it expires.
	killed := time.Now()
	a.stop(t, syscall.SIGKILL)
	crashTakeover := waitLeading(b, 60*time.Second).Sub(killed)
	if lastA := a.times(cycleRE); len(lastA) > 0 {
		if firstB := b.times(cycleRE); len(firstB) > 0 && firstB[0].Before(lastA[len(lastA)-1]) {
			t.Errorf("replica b ran a cycle at %v, before replica a's last at %v", firstB[0], lastA[len(lastA)-1])
		}
	}

	// Clean shutdown: a third replica waits; SIGTERM to the leader releases the Lease.
	c3 := startReplica(t, bin, "c", args...)
	if err := harness.WaitFor(ctx, 30*time.Second, func(context.Context) (bool, error) {
		return len(b.times(cycleRE)) >= 2, nil
	}); err != nil {
		t.Fatalf("new leader ran %d cycles", len(b.times(cycleRE)))
	}
	stopped := time.Now()
	b.stop(t, syscall.SIGTERM)
	exited := time.Now()
	cleanTakeover := waitLeading(c3, 60*time.Second).Sub(stopped)
	if firstC := c3.times(cycleRE); len(firstC) > 0 && firstC[0].Before(exited) {
		if lastB := b.times(cycleRE); len(lastB) > 0 && firstC[0].Before(lastB[len(lastB)-1]) {
			t.Errorf("replica c ran a cycle at %v, before replica b's last at %v", firstC[0], lastB[len(lastB)-1])
		}
	}
	if err := harness.WaitFor(ctx, 30*time.Second, func(context.Context) (bool, error) {
		return len(c3.times(cycleRE)) >= 1, nil
	}); err != nil {
		t.Errorf("replica c ran no cycle after taking over")
	}
	c3.stop(t, syscall.SIGTERM)

	// No pod evicted twice, over all replicas.
	seen := map[string]string{}
	total := 0
	for _, r := range []*replica{a, b, c3} {
		for _, p := range r.matching(evictedRE) {
			total++
			if prev, dup := seen[p]; dup {
				t.Errorf("pod %s evicted by replica %s and again by %s", p, prev, r.name)
			}
			seen[p] = r.name
		}
	}
	if total == 0 {
		t.Errorf("no eviction in the replicas' logs; replica a's log:\n%s", a.tail(40))
	}
	leaseDuration, retry := leaseTiming(t, shippedLeaseFlags(t))
	if bound := takeoverBound(leaseDuration, retry); crashTakeover > bound {
		t.Errorf("takeover after a crash took %s, more than the lease settings allow (%s)", crashTakeover, bound)
	}
	figure(t, "descheduler_takeover_crash", "%.1fs (SIGKILL; target 20s; lease %s)", crashTakeover.Seconds(), strings.Join(shippedLeaseFlags(t), " "))
	figure(t, "descheduler_takeover_clean", "%.1fs (SIGTERM, Lease released)", cleanTakeover.Seconds())
	figure(t, "descheduler_failover_evictions", "%d evictions over 3 replicas, %d distinct pods", total, len(seen))
}
