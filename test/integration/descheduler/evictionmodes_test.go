package descheduler

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/utils/ptr"

	"github.com/accord-sched/accord/pkg/descheduler/evictions"
	"github.com/accord-sched/accord/pkg/descheduler/explain"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
	"github.com/accord-sched/accord/test/harness"
)

// softAnnotated returns the app's pods carrying the soft-eviction annotation, and all its pods' UIDs.
func softAnnotated(t *testing.T, ns, app string) (annotated []*corev1.Pod, uids map[types.UID]bool) {
	t.Helper()
	list, err := env.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	uids = map[types.UID]bool{}
	for i := range list.Items {
		p := &list.Items[i]
		uids[p.UID] = p.DeletionTimestamp == nil
		if _, ok := p.Annotations[evictions.SoftEvictionAnnotation]; ok {
			annotated = append(annotated, p)
		}
	}
	return annotated, uids
}

// TestSoftEvictionAnnotatesAndEvictsNothing: a profile in evictionMode Soft over a node that stops
// fitting (NodeCRDResourceFit) annotates the Deployment's pods instead of evicting them: exactly 2
// of 4 (the default workload budget for 4 replicas; soft-evicted pods count against it across
// cycles), none evicted, counted "soft"; once the node fits again, the next complete cycles no
// longer nominate them and the annotations are removed.
func TestSoftEvictionAnnotatesAndEvictsNothing(t *testing.T) {
	ctx := context.Background()
	c := newDisruptionCluster(t, "bad", "good")
	c.bindTo(func() string { return c.nodes[0] })
	c.deployment(t, "soft", 4)
	if err := harness.WaitFor(ctx, 60*time.Second, func(context.Context) (bool, error) {
		pods, _ := c.readyPods(t, "soft")
		return pods[c.nodes[0]] == 4, nil
	}); err != nil {
		t.Fatalf("the Deployment's pods are not Ready: %v", err)
	}
	_, before := softAnnotated(t, c.ns, "soft")
	c.bindTo(func() string { return c.nodes[1] })
	m := metrics.New()
	runDescheduler(t, runner.Config{RestConfig: env.Config, PolicyConfigFile: disruptionPolicy(t, c.ns, "", "  evictionMode: Soft\n"), Metrics: m,
		DeschedulingInterval: 200 * time.Millisecond, EventDriven: true})
	start := time.Now()
	c.disableCPU(t, c.nodes[0])
	if err := harness.WaitFor(ctx, 30*time.Second, func(context.Context) (bool, error) {
		a, _ := softAnnotated(t, c.ns, "soft")
		return len(a) == 2, nil
	}); err != nil {
		t.Fatalf("2 pods not annotated in 30 s: %v", err)
	}
	annotatedAt := time.Since(start)
	// Fifteen more cycles: still exactly 2, the same pods, none evicted.
	time.Sleep(3 * time.Second)
	annotated, after := softAnnotated(t, c.ns, "soft")
	if len(annotated) != 2 {
		t.Errorf("%d pods annotated after 15 more cycles, want 2 (the workload budget)", len(annotated))
	}
	for uid := range before {
		if !after[uid] {
			t.Errorf("pod %s evicted or terminating in Soft mode (pods now %v)", uid, after)
		}
	}
	if len(after) != len(before) {
		t.Errorf("pods now %d, were %d", len(after), len(before))
	}
	for _, p := range annotated {
		se, ok := evictions.ParseSoftEviction(p)
		if !ok || se.Profile != "fit" || se.Plugin != "NodeCRDResourceFit" || se.Time.IsZero() {
			t.Errorf("annotation of %s: %q", p.Name, p.Annotations[evictions.SoftEvictionAnnotation])
		}
	}
	soft, _ := testutil.GetCounterMetricValue(m.PodsEvicted.WithLabelValues(metrics.ResultSoft, "NodeCRDResourceFit", "fit", c.ns, c.nodes[0]))
	evicted, _ := testutil.GetCounterMetricValue(m.PodsEvicted.WithLabelValues(metrics.ResultSuccess, "NodeCRDResourceFit", "fit", c.ns, c.nodes[0]))
	if soft != 2 || evicted != 0 {
		t.Errorf("pods_evicted_total soft=%v success=%v, want 2 and 0", soft, evicted)
	}
	if v, _ := testutil.GetGaugeMetricValue(m.EvictionsInProgress.WithLabelValues(evictions.InProgressSoft)); v != 2 {
		t.Errorf("evictions_in_progress{kind=soft} = %v, want 2", v)
	}
	// explain (a dry run, which writes nothing) shows the annotated pods as in progress.
	rows, err := explain.Run(ctx, runner.Config{RestConfig: env.Config, PolicyConfigFile: disruptionPolicy(t, c.ns, "", "  evictionMode: Soft\n")})
	if err != nil {
		t.Fatal(err)
	}
	inProgress := 0
	for _, r := range rows {
		if r.BlockedBy == explain.BlockedByInProgress {
			inProgress++
		}
	}
	if inProgress != 2 {
		t.Errorf("explain shows %d pods blocked by %q, want the 2 annotated: %+v", inProgress, explain.BlockedByInProgress, rows)
	}
	if a, _ := softAnnotated(t, c.ns, "soft"); len(a) != 2 {
		t.Errorf("%d pods annotated after explain, want 2", len(a))
	}
	// The node fits again: no plugin nominates the pods, the annotations go.
	if _, err := env.Accord.SchedulingV1alpha1().ClusterScopedResources().Patch(ctx, c.nodes[0], types.MergePatchType,
		[]byte(`{"spec":{"resourcesFilter":{"cpu":true}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	fits := time.Now()
	if err := harness.WaitFor(ctx, 30*time.Second, func(context.Context) (bool, error) {
		a, _ := softAnnotated(t, c.ns, "soft")
		return len(a) == 0, nil
	}); err != nil {
		t.Fatalf("annotations not removed within 30 s of the node fitting again: %v", err)
	}
	t.Logf("FIGURE soft_eviction: 2 of 4 pods annotated %.1f s after the node stopped fitting, 0 evicted; annotations removed %.1f s after it fit again",
		annotatedAt.Seconds(), time.Since(fits).Seconds())
}

// evacuationWebhook answers evictions of pods annotated request-evict-only as KubeVirt's
// virt-api does for a VMI's pod: 429 "Eviction triggered evacuation ...", and, as its controller,
// marks the pod eviction-in-progress and, after migrate, deletes it (the migration done). It counts
// the requests per pod and the migrations running at once.
type evacuationWebhook struct {
	t       *testing.T
	ns      string
	migrate time.Duration

	mu       sync.Mutex
	requests map[types.UID]int
	running  int
	maxRun   int
	wg       sync.WaitGroup
}

func (h *evacuationWebhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	req := review.Request
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	ctx := context.Background()
	pod, err := env.Client.CoreV1().Pods(req.Namespace).Get(ctx, req.Name, metav1.GetOptions{})
	if err == nil && req.SubResource == "eviction" {
		if _, ok := pod.Annotations[evictions.RequestEvictOnlyAnnotation]; ok {
			resp.Allowed = false
			resp.Result = &metav1.Status{Code: http.StatusTooManyRequests,
				Message: fmt.Sprintf("%s of VMI %s/%s", evictions.EvictionInBackgroundErrorText, pod.Namespace, pod.Name)}
			h.mu.Lock()
			h.requests[pod.UID]++
			first := h.requests[pod.UID] == 1
			if first {
				h.running++
				h.maxRun = max(h.maxRun, h.running)
			}
			h.mu.Unlock()
			if first {
				h.wg.Add(1)
				go h.migrate1(pod)
			}
		}
	}
	review.Response = resp
	_ = json.NewEncoder(w).Encode(review)
}

func (h *evacuationWebhook) migrate1(pod *corev1.Pod) {
	defer h.wg.Done()
	ctx := context.Background()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"migrating"}}}`, evictions.EvictionInProgressAnnotation)
	if _, err := env.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		h.t.Errorf("marking %s eviction-in-progress: %v", pod.Name, err)
	}
	time.Sleep(h.migrate)
	h.mu.Lock()
	h.running--
	h.mu.Unlock()
	if err := env.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0),
		Preconditions: &metav1.Preconditions{UID: &pod.UID}}); err != nil {
		h.t.Errorf("deleting migrated %s: %v", pod.Name, err)
	}
}

// serveEvacuationWebhook serves h over TLS and registers it for pods/eviction in h.ns.
func serveEvacuationWebhook(t *testing.T, h *evacuationWebhook) {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(func() { h.wg.Wait(); srv.Close() })
	name := "evacuation-" + h.ns
	sideEffects := admissionregistrationv1.SideEffectClassNoneOnDryRun
	fail := admissionregistrationv1.Fail
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "evacuation.test.accord.dev",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(srv.URL + "/evict"), CABundle: certPEM},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/eviction"}}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": h.ns}},
			SideEffects:             &sideEffects,
			FailurePolicy:           &fail,
			AdmissionReviewVersions: []string{"v1"},
		}}}
	if _, err := env.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(context.Background(), cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// TestEvictionsInBackgroundWithWebhook: with --feature-gates=EvictionsInBackground=true, the 4 pods
// (annotated request-evict-only) of a Deployment on a node that stops fitting are evicted in
// background through a webhook answering as KubeVirt's: each pod's eviction is requested exactly
// once, however many cycles (every 200 ms) and events nominate it while it migrates (2 s); with
// maxNoOfPodsToEvictPerNamespace 1, never more than one migrates at once (an eviction in progress
// counts against the cap in every cycle until its pod is gone); all end on the good node and the
// tracking ends with them.
func TestEvictionsInBackgroundWithWebhook(t *testing.T) {
	ctx := context.Background()
	c := newDisruptionCluster(t, "bad", "good")
	h := &evacuationWebhook{t: t, ns: c.ns, migrate: 2 * time.Second, requests: map[types.UID]int{}}
	serveEvacuationWebhook(t, h)
	c.bindTo(func() string { return c.nodes[0] })
	c.deploymentAnnotated(t, "vm", 4, map[string]string{evictions.RequestEvictOnlyAnnotation: ""})
	if err := harness.WaitFor(ctx, 60*time.Second, func(context.Context) (bool, error) {
		pods, _ := c.readyPods(t, "vm")
		list, err := env.Client.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=vm"})
		if err != nil {
			return false, err
		}
		annotated := 0
		for _, p := range list.Items {
			if _, ok := p.Annotations[evictions.RequestEvictOnlyAnnotation]; ok && p.DeletionTimestamp == nil {
				annotated++
			}
		}
		return pods[c.nodes[0]] == 4 && annotated == 4 && len(list.Items) == 4, nil
	}); err != nil {
		t.Fatalf("the Deployment's 4 annotated pods are not Ready: %v", err)
	}
	c.bindTo(func() string { return c.nodes[1] })
	m := metrics.New()
	runDescheduler(t, runner.Config{RestConfig: env.Config, PolicyConfigFile: disruptionPolicy(t, c.ns, "maxNoOfPodsToEvictPerNamespace: 1\n", ""), Metrics: m,
		DeschedulingInterval: 200 * time.Millisecond, EventDriven: true, EvictionsInBackground: true})
	start := time.Now()
	c.disableCPU(t, c.nodes[0])
	if err := harness.WaitFor(ctx, 60*time.Second, func(context.Context) (bool, error) {
		pods, _ := c.readyPods(t, "vm")
		return pods[c.nodes[1]] == 4, nil
	}); err != nil {
		pods, _ := c.readyPods(t, "vm")
		t.Fatalf("not all 4 pods moved in 60 s: Ready by node %v", pods)
	}
	took := time.Since(start)
	h.mu.Lock()
	requests, maxRun := map[types.UID]int{}, h.maxRun
	for k, v := range h.requests {
		requests[k] = v
	}
	h.mu.Unlock()
	if len(requests) != 4 {
		t.Errorf("evictions requested for %d pods, want 4", len(requests))
	}
	for uid, n := range requests {
		if n != 1 {
			t.Errorf("pod %s: eviction requested %d times while in progress, want once", uid, n)
		}
	}
	if maxRun != 1 {
		t.Errorf("%d migrations at once, want 1 (maxNoOfPodsToEvictPerNamespace 1 counts the evictions in progress)", maxRun)
	}
	var background, success float64
	for _, n := range c.nodes {
		v, _ := testutil.GetCounterMetricValue(m.PodsEvicted.WithLabelValues(metrics.ResultBackground, "NodeCRDResourceFit", "fit", c.ns, n))
		background += v
		v, _ = testutil.GetCounterMetricValue(m.PodsEvicted.WithLabelValues(metrics.ResultSuccess, "NodeCRDResourceFit", "fit", c.ns, n))
		success += v
	}
	if background != 4 || success != 0 {
		t.Errorf("pods_evicted_total background=%v success=%v, want 4 and 0", background, success)
	}
	if err := harness.WaitFor(ctx, 10*time.Second, func(context.Context) (bool, error) {
		v, err := testutil.GetGaugeMetricValue(m.EvictionsInProgress.WithLabelValues(evictions.InProgressBackground))
		return err == nil && v == 0, nil
	}); err != nil {
		t.Errorf("evictions_in_progress{kind=background} not back to 0 once the pods are gone: %v", err)
	}
	t.Logf("FIGURE evictions_in_background: 4 pods moved through a KubeVirt-style webhook in %s (2 s migrations, at most %d at once), each requested once",
		took.Round(100*time.Millisecond), maxRun)
}
