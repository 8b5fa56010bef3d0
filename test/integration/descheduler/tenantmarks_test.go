package descheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/metrics/testutil"

	"github.com/accord-sched/accord/pkg/descheduler/evictions"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
	"github.com/accord-sched/accord/test/harness"
)

// installMarksPolicy creates the kustomize base's ValidatingAdmissionPolicy accord-descheduler-marks
// and its binding, and removes them when the test ends.
func installMarksPolicy(t *testing.T) {
	t.Helper()
	f, err := os.Open("../../../manifests/admission/descheduler-marks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var policy admissionregistrationv1.ValidatingAdmissionPolicy
	var binding admissionregistrationv1.ValidatingAdmissionPolicyBinding
	if err := dec.Decode(&policy); err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(&binding); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	api := env.Client.AdmissionregistrationV1()
	if _, err := api.ValidatingAdmissionPolicies().Create(ctx, &policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, &binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = api.ValidatingAdmissionPolicyBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
		_ = api.ValidatingAdmissionPolicies().Delete(context.Background(), policy.Name, metav1.DeleteOptions{})
		// The policy stops applying a moment after its deletion: wait for that (a dry-run create of a
		// marked pod is admitted again), so that the next test starts without it.
		probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "marks-probe", Annotations: map[string]string{evictions.SoftEvictionAnnotation: "{}"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}}}
		if err := harness.WaitFor(context.Background(), 30*time.Second, func(ctx context.Context) (bool, error) {
			_, err := env.Client.CoreV1().Pods(metav1.NamespaceDefault).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err == nil, nil
		}); err != nil {
			t.Errorf("the marks policy still applies 30 s after its deletion: %v", err)
		}
	})
}

// TestTenantMarksHoldNoEviction: a tenant keeps the soft-eviction annotation on 20 pods of its
// namespace, on the node the descheduler drains, under caps of 2 per node and 20 in all. Without the
// admission policy its writes go through, and the descheduler, which counts only the marks its own
// field manager wrote, still evicts the other namespace's pods from the node and leaves the tenant's
// annotations alone; with the policy every write of the tenant is refused, and the same evictions
// happen.
func TestTenantMarksHoldNoEviction(t *testing.T) {
	for _, withPolicy := range []bool{false, true} {
		t.Run(fmt.Sprintf("policy=%v", withPolicy), func(t *testing.T) {
			ctx := context.Background()
			c := newDisruptionCluster(t, "bad", "good")
			c.bindTo(func() string { return c.nodes[0] })
			c.deployment(t, "victim", 2)
			if err := harness.WaitFor(ctx, 60*time.Second, func(context.Context) (bool, error) {
				pods, _ := c.readyPods(t, "victim")
				return pods[c.nodes[0]] == 2, nil
			}); err != nil {
				t.Fatalf("the victims are not Ready: %v", err)
			}
			// The tenant's 20 pods, on the node the descheduler will drain.
			tenantNS := env.CreateNamespace(t, "tenant")
			for i := range 20 {
				p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("t-%d", i)},
					Spec: corev1.PodSpec{NodeName: c.nodes[0], Containers: []corev1.Container{{Name: "c", Image: "pause"}}}}
				if _, err := env.Client.CoreV1().Pods(tenantNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if withPolicy {
				installMarksPolicy(t)
			}
			tenantCfg := rest.CopyConfig(env.Config)
			tenantCfg.Impersonate = rest.ImpersonationConfig{UserName: "tenant@example.com", Groups: []string{"system:authenticated"}}
			tenant, err := kubernetes.NewForConfig(tenantCfg)
			if err != nil {
				t.Fatal(err)
			}
			mark, err := json.Marshal(evictions.SoftEviction{Time: time.Now().UTC().Add(-time.Hour).Truncate(time.Second), Profile: "fit", Plugin: "NodeCRDResourceFit"})
			if err != nil {
				t.Fatal(err)
			}
			body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{evictions.SoftEvictionAnnotation: string(mark)}}})
			if err != nil {
				t.Fatal(err)
			}
			annotate := func(ctx context.Context, name string, opts metav1.PatchOptions) error {
				_, err := tenant.CoreV1().Pods(tenantNS).Patch(ctx, name, types.MergePatchType, body, opts)
				return err
			}
			if withPolicy {
				// The binding takes effect within a second or two: probe with dry runs (admission runs).
				if err := harness.WaitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
					return annotate(ctx, "t-0", metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}) != nil, nil
				}); err != nil {
					t.Fatalf("the tenant's marks are still admitted 30 s after the policy was created: %v", err)
				}
			}
			// The tenant annotates its pods, and re-annotates any pod that loses the annotation,
			// every 100 ms until the victims have moved.
			var mu sync.Mutex
			var applied, refused int
			var lastRefusal error
			tenantCtx, stopTenant := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() {
				defer close(done)
				for tenantCtx.Err() == nil {
					if list, err := env.Client.CoreV1().Pods(tenantNS).List(tenantCtx, metav1.ListOptions{}); err == nil {
						for _, p := range list.Items {
							if _, ok := p.Annotations[evictions.SoftEvictionAnnotation]; ok {
								continue
							}
							err := annotate(tenantCtx, p.Name, metav1.PatchOptions{FieldManager: "kubectl-annotate"})
							mu.Lock()
							if err == nil {
								applied++
							} else if apierrors.IsForbidden(err) {
								refused, lastRefusal = refused+1, err
							}
							mu.Unlock()
						}
					}
					select {
					case <-tenantCtx.Done():
					case <-time.After(100 * time.Millisecond):
					}
				}
			}()
			defer func() { stopTenant(); <-done }()

			m := metrics.New()
			policy := disruptionPolicy(t, c.ns, "", "")
			doc, err := os.ReadFile(policy)
			if err != nil {
				t.Fatal(err)
			}
			caps := strings.Replace(string(doc), "maxNoOfPodsToEvictPerNode: 50\nmaxNoOfPodsToEvictTotal: 100", "maxNoOfPodsToEvictPerNode: 2\nmaxNoOfPodsToEvictTotal: 20", 1)
			if caps == string(doc) {
				t.Fatalf("disruptionPolicy no longer sets the caps this test lowers:\n%s", doc)
			}
			if err := os.WriteFile(policy, []byte(caps), 0o644); err != nil {
				t.Fatal(err)
			}
			// Let the tenant's first pass land before the descheduler starts.
			if err := harness.WaitFor(ctx, 30*time.Second, func(context.Context) (bool, error) {
				mu.Lock()
				defer mu.Unlock()
				return applied+refused >= 20, nil
			}); err != nil {
				t.Fatalf("the tenant's first 20 writes did not happen: %v", err)
			}
			runDescheduler(t, runner.Config{RestConfig: env.Config, PolicyConfigFile: policy, Metrics: m,
				DeschedulingInterval: 200 * time.Millisecond, EventDriven: true})
			c.bindTo(func() string { return c.nodes[1] })
			start := time.Now()
			c.disableCPU(t, c.nodes[0])
			if err := harness.WaitFor(ctx, 60*time.Second, func(context.Context) (bool, error) {
				pods, _ := c.readyPods(t, "victim")
				return pods[c.nodes[1]] == 2, nil
			}); err != nil {
				pods, _ := c.readyPods(t, "victim")
				t.Fatalf("the victims did not move off %s within 60 s (ready by node: %v): %v", c.nodes[0], pods, err)
			}
			moved := time.Since(start)
			stopTenant()
			<-done

			list, err := env.Client.CoreV1().Pods(tenantNS).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			marked := 0
			for _, p := range list.Items {
				if _, ok := p.Annotations[evictions.SoftEvictionAnnotation]; ok {
					marked++
				}
			}
			if withPolicy {
				if applied != 0 || marked != 0 || refused < 20 {
					t.Errorf("with the policy: %d tenant writes admitted, %d pods marked, %d refused; want 0, 0 and at least 20", applied, marked, refused)
				}
				if lastRefusal == nil || !strings.Contains(lastRefusal.Error(), "only accord-descheduler may set, change or remove the descheduler.accord.dev/ annotations of a pod") {
					t.Errorf("the refusal does not say why: %v", lastRefusal)
				}
			} else if applied != 20 || marked != 20 {
				// The descheduler neither counted nor cleared the tenant's marks: each was written once.
				t.Errorf("without the policy: %d tenant writes, %d pods marked at the end; want 20 and 20 (the descheduler leaves foreign marks alone)", applied, marked)
			}
			if v, _ := testutil.GetGaugeMetricValue(m.EvictionsInProgress.WithLabelValues(evictions.InProgressSoft)); v != 0 {
				t.Errorf("evictions_in_progress{kind=soft} = %v, want 0: the tenant's marks were counted", v)
			}
			t.Logf("policy=%v: both victims moved in %v; tenant's writes: %d admitted, %d refused (%v)", withPolicy, moved.Round(time.Millisecond), applied, refused, lastRefusal)
		})
	}
}
