package playground

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/accord-sched/accord/pkg/demo/playground"
	"github.com/accord-sched/accord/pkg/descheduler/explain"
	"github.com/accord-sched/accord/pkg/kubectlaccord"
	"github.com/accord-sched/accord/test/harness"
)

// recorder records the method and path of every request a client configuration sends.
type recorder struct {
	mu       sync.Mutex
	requests []string
}

func (r *recorder) wrap(cfg *rest.Config) *rest.Config {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			r.mu.Lock()
			r.requests = append(r.requests, req.Method+" "+req.URL.Path)
			r.mu.Unlock()
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

// writes are the recorded requests that are not GETs (list, get and watch are).
func (r *recorder) writes() (all int, writes []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, req := range r.requests {
		if !strings.HasPrefix(req, http.MethodGet+" ") {
			writes = append(writes, req)
		}
	}
	return len(r.requests), writes
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// whatIfNode5 runs the banner's `kubectl accord` example (what-if with node-5's CR as the banner's
// change leaves it) in-process, as cmd/kubectl-accord's main does, with -o json, through a transport
// that records every request the command sends: it must send only GETs (nothing is written). It
// returns the report and the memory-hungry pods on node-5 then.
func whatIfNode5(ctx context.Context, t *testing.T, p *playground.Playground, client kubernetes.Interface) (*kubectlaccord.WhatIfReport, sets.Set[string]) {
	t.Helper()
	example := p.WhatIfExample()
	if line := "bin/kubectl-accord " + strings.Join(example, " "); !strings.Contains(p.Banner(), line) {
		t.Errorf("the banner does not print the kubectl accord example %q:\n%s", line, p.Banner())
	}
	// DefaultEvictor's minPodAge (5s in the playground policy) leaves younger pods out of both the
	// prediction and the real cycle: wait until the memory-hungry pods are older.
	var onNode5 sets.Set[string]
	for {
		pods, err := client.CoreV1().Pods("demo").List(ctx, metav1.ListOptions{LabelSelector: "app=memory-hungry"})
		if err != nil {
			t.Fatal(err)
		}
		onNode5 = sets.New[string]()
		youngest := time.Duration(1 << 62)
		for _, pod := range pods.Items {
			if pod.Spec.NodeName == "node-5" && pod.Status.Phase == corev1.PodRunning {
				onNode5.Insert(pod.Name)
			}
			youngest = min(youngest, time.Since(pod.CreationTimestamp.Time))
		}
		if youngest > 6*time.Second {
			break
		}
		t.Logf("Waiting %v for the memory-hungry pods to pass the policy's minPodAge", (6*time.Second - youngest).Round(time.Second))
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(6*time.Second - youngest):
		}
	}
	if onNode5.Len() == 0 {
		t.Fatal("no memory-hungry pod runs on node-5: the what-if example has nothing to predict")
	}

	rec := &recorder{}
	flags := genericclioptions.NewConfigFlags(true)
	flags.WrapConfigFn = rec.wrap
	var out, errOut bytes.Buffer
	start := time.Now()
	code := kubectlaccord.MainWithFlags(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, flags,
		append(slices.Clone(example), "-o", "json"))
	if code != kubectlaccord.ExitOK {
		t.Fatalf("kubectl-accord %s -o json: exit %d\n%s%s", strings.Join(example, " "), code, out.String(), errOut.String())
	}
	var rep kubectlaccord.WhatIfReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("what-if -o json: %v\n%s", err, out.String())
	}
	all, writes := rec.writes()
	if all == 0 || len(writes) > 0 {
		t.Errorf("what-if sent %d requests, %d not GETs: %v (it must write nothing)", all, len(writes), writes)
	}
	t.Logf("what-if took %v, %d requests (all GETs): %d eviction(s) now, %d held for later cycles, %d blocked",
		time.Since(start).Round(100*time.Millisecond), all, rep.Evictions, rep.Held, rep.Blocked)
	for _, r := range rep.Rows {
		t.Logf("what-if: %s/%s on %s: %s by %s, blocked by %q, simulation %q, predicted %q (%s) %s", r.Namespace, r.Pod, r.Node, r.Verdict, r.Plugin, r.BlockedBy,
			r.SimulationReason, r.PredictedNode, r.Reason, r.Message)
	}
	if len(rep.Replaced) != 1 || rep.Replaced[0].Name != "node-5" || rep.Replaced[0].New {
		t.Errorf("what-if replaced %+v, want node-5's live CR", rep.Replaced)
	}
	return &rep, onNode5
}

// predictedMoves are the pods a what-if report says the descheduler evicts (this cycle, or a later
// one: kubectlaccord.Held), with the node predicted for each one's replacement.
func predictedMoves(t *testing.T, rep *kubectlaccord.WhatIfReport) map[string]string {
	t.Helper()
	moves := map[string]string{}
	for _, r := range rep.Rows {
		if r.Verdict == explain.VerdictEvict || kubectlaccord.Held(r) {
			moves[r.Pod] = r.PredictedNode
		}
	}
	return moves
}

// checkWhatIfCameTrue compares the prediction with what the descheduler did once the change was
// applied: exactly the predicted pods were evicted (the pods on node-5 then), and the replacements
// landed on the predicted nodes.
func checkWhatIfCameTrue(ctx context.Context, t *testing.T, client kubernetes.Interface, moves map[string]string, onNode5, before sets.Set[string]) {
	t.Helper()
	if got := sets.KeySet(moves); !got.Equal(onNode5) {
		t.Errorf("what-if predicted evictions of %v; the memory-hungry pods on node-5 were %v", sets.List(got), sets.List(onNode5))
	}
	pods, err := client.CoreV1().Pods("demo").List(ctx, metav1.ListOptions{LabelSelector: "app=memory-hungry"})
	if err != nil {
		t.Fatal(err)
	}
	now, landed := sets.New[string](), sets.New[string]()
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp != nil {
			continue
		}
		now.Insert(pod.Name)
		if !before.Has(pod.Name) {
			landed.Insert(pod.Spec.NodeName)
		}
	}
	if evicted := before.Difference(now); !evicted.Equal(onNode5) {
		t.Errorf("the descheduler evicted %v; what-if predicted %v", sets.List(evicted), sets.List(sets.KeySet(moves)))
	}
	// A pod held for a later cycle (the workload budget's slot taken by the pod decided before it)
	// is refused at the limits, before SchedulerSimulation: what-if has no node for it, and its
	// replacement lands where that later cycle's simulation puts it.
	predicted := sets.New[string]()
	for _, n := range moves {
		if n != "" {
			predicted.Insert(n)
		}
	}
	if !landed.Equal(predicted) {
		t.Errorf("the replacements landed on %v; what-if predicted %v", sets.List(landed), sets.List(predicted))
	}
	t.Logf("what-if came true: %d pods evicted off node-5, replacements on %v", onNode5.Len(), sets.List(landed))
}

// checkWhyEvicted runs `kubectl accord why` in-process (as the what-if check does) for one of the
// memory-hungry pods the descheduler evicted off node-5, once it is gone: its story is then the
// descheduler's decision on its Event, which must name the plugin (NodeCRDResourceFit), the node
// predicted for its replacement, and the replacement and the node it landed on.
func checkWhyEvicted(ctx context.Context, t *testing.T, p *playground.Playground, client kubernetes.Interface, moves map[string]string, onNode5 sets.Set[string]) {
	t.Helper()
	if onNode5.Len() == 0 {
		return
	}
	// The pod what-if predicted a node for (the one evicted in that cycle; a pod held for a later
	// cycle by the workload budget has none, see checkWhatIfCameTrue).
	var evicted string
	for _, name := range sets.List(onNode5) {
		if moves[name] != "" {
			evicted = name
			break
		}
	}
	if evicted == "" {
		t.Fatalf("what-if predicted no node for any of the evicted pods %v: %v", sets.List(onNode5), moves)
	}
	t.Logf("Waiting up to 60s for the evicted pod demo/%s to be gone (its grace period)", evicted)
	if err := harness.WaitFor(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Pods("demo").Get(ctx, evicted, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}); err != nil {
		t.Fatalf("the evicted pod demo/%s is not gone: %v", evicted, err)
	}
	args := []string{"--kubeconfig", p.Kubeconfig, "why", evicted, "-n", "demo"}
	run := func(args ...string) string {
		var out, errOut bytes.Buffer
		code := kubectlaccord.MainWithFlags(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
			genericclioptions.NewConfigFlags(true), args)
		if code != kubectlaccord.ExitOK {
			t.Fatalf("kubectl-accord %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
		}
		return out.String()
	}
	var rep kubectlaccord.WhyReport
	if out := run(append(slices.Clone(args), "-o", "json")...); json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("why -o json:\n%s", out)
	}
	var d *kubectlaccord.RecordedDecision
	for i := range rep.Decisions {
		if rep.Decisions[i].Verdict == "Evicted" {
			d = &rep.Decisions[i]
		}
	}
	if !rep.Gone || d == nil || d.ReplacementPod == "" || d.ReplacementNode == "" {
		t.Fatalf("why %s: want a gone pod with an Evicted decision and its replacement, got %+v", evicted, rep)
	}
	replacement, err := client.CoreV1().Pods("demo").Get(ctx, d.ReplacementPod, metav1.GetOptions{})
	if err != nil || replacement.Spec.NodeName != d.ReplacementNode || onNode5.Has(d.ReplacementPod) {
		t.Errorf("why %s names replacement %s on %s; the cluster has %v, %v", evicted, d.ReplacementPod, d.ReplacementNode, replacement, err)
	}
	// Evicted reservation-first: the replacement is the pod that consumed the pod's reservation.
	if d.Reservation != "" {
		r, err := p.Env.Accord.SchedulingV1alpha1().Reservations("demo").Get(ctx, d.Reservation, metav1.GetOptions{})
		if err != nil || r.Status.BoundPod == nil || r.Status.BoundPod.Name != d.ReplacementPod {
			t.Errorf("why %s names replacement %s; its reservation %s: %+v, %v", evicted, d.ReplacementPod, d.Reservation, r, err)
		}
	}
	out := run(args...)
	for _, want := range []string{
		"Pod demo/" + evicted + ": gone (not found)",
		"plugin NodeCRDResourceFit",
		"predicted node: " + moves[evicted],
		"replacement: " + d.ReplacementPod + " on " + d.ReplacementNode,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("why %s lacks %q (what-if predicted %q):\n%s", evicted, want, moves[evicted], out)
		}
	}
	if d.PredictedNode != moves[evicted] {
		t.Errorf("why %s: the decision predicted %q, what-if %q", evicted, d.PredictedNode, moves[evicted])
	}
	t.Logf("why %s (gone):\n%s", evicted, out)
}
