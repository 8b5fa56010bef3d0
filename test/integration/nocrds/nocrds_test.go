// Package nocrds runs the real accord-descheduler and accord-scheduler binaries on a control plane
// without Accord's CRDs, as an operator migrating from kubernetes-sigs/descheduler has it: standard
// plugins run, and a plugin that needs a missing CRD stops the binary at once with an error naming
// the CRD and the plugin.
package nocrds

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/accord-sched/accord/test/harness"
)

var env *harness.Env

func TestMain(m *testing.M) { harness.Main(m, &env, harness.Options{WithoutCRDs: true}) }

// binaries are built once per test binary run (each test builds what it runs otherwise).
func descheduler(t *testing.T) string {
	return harness.BuildBinary(t, "github.com/accord-sched/accord/cmd/descheduler")
}

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// expectExit runs bin and expects it to exit non-zero within 30 s with output naming each of want.
func expectExit(t *testing.T, bin string, args []string, want ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	began := time.Now()
	out, err := osexec.CommandContext(ctx, bin, args...).CombinedOutput()
	var exit *osexec.ExitError
	if !errors.As(err, &exit) || ctx.Err() != nil {
		t.Fatalf("want a non-zero exit within 30s, got %v after %s\n%s", err, time.Since(began), out)
	}
	for _, w := range want {
		if !strings.Contains(string(out), w) {
			t.Errorf("the error does not name %s:\n%s", w, out)
		}
	}
	t.Logf("%s exited %d after %s", filepath.Base(bin), exit.ExitCode(), time.Since(began).Round(time.Millisecond))
}

// TestStandardPolicyRunsWithoutCRDs: a policy of standard plugins (RemovePodsViolatingNodeTaints,
// with the defaults: DefaultEvictor and SchedulerSimulation on) runs on a cluster that does not
// serve Accord's CRDs: /readyz turns 200 and the pod on the tainted node is evicted.
func TestStandardPolicyRunsWithoutCRDs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := descheduler(t)
	ns := env.CreateNamespace(t, "nocrd")
	tainted, clean := ns+"-tainted", ns+"-clean"
	for _, n := range []string{tainted, clean} {
		if _, err := env.Nodes.CreateNode(ctx, harness.NodeSpec{Name: n, Labels: map[string]string{"test.accord.dev/ns": ns}}); err != nil {
			t.Fatal(err)
		}
		name := n
		t.Cleanup(func() { _ = env.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	if err := env.Nodes.WaitForNodesReady(ctx, tainted, clean); err != nil {
		t.Fatal(err)
	}
	pod, err := env.Client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "victim"},
		Spec:       corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0), NodeName: tainted, Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node, err := env.Client.CoreV1().Nodes().Get(ctx, tainted, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: "test.accord.dev/dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule})
	if _, err := env.Client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	// An upstream-style policy: DefaultEvictor listed by hand, bare pods allowed (the test pod has
	// no owner); SchedulerSimulation is on by default and simulates kube-scheduler's defaults.
	policy := write(t, dir, "policy.yaml", fmt.Sprintf(`apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: "test.accord.dev/ns=%s"
profiles:
- name: taints
  pluginConfig:
  - name: DefaultEvictor
    args: {nodeFit: true, podProtections: {defaultDisabled: [BarePods]}}
  plugins:
    filter: {enabled: [DefaultEvictor]}
    preEvictionFilter: {enabled: [DefaultEvictor]}
    deschedule: {enabled: [RemovePodsViolatingNodeTaints]}
`, ns))
	port := harness.FreePort(t)
	out := harness.StartBinary(t, ctx, bin, "--kubeconfig="+kubeconfig, "--policy-config-file="+policy,
		"--descheduling-interval=2s", fmt.Sprintf("--secure-port=%d", port), "--bind-address=127.0.0.1", "-v=2")

	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	start := time.Now()
	var readyAfter time.Duration
	for readyAfter == 0 {
		if time.Since(start) > 60*time.Second {
			t.Fatal("/readyz never answered 200 within 60s")
		}
		if resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/readyz", port)); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				readyAfter = time.Since(start)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	for {
		_, err := env.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if ctx.Err() != nil || time.Since(start) > 90*time.Second {
			t.Fatalf("the pod on the tainted node was not evicted within 90s (last error %v)", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("ready after %s, pod evicted after %s, on a cluster without Accord's CRDs", readyAfter.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	for _, bad := range []string{"did not sync", "Waiting for informer caches"} {
		if strings.Contains(out.String(), bad) {
			t.Errorf("the descheduler logged %q", bad)
		}
	}
}

// TestMissingCRDStopsTheDescheduler: a policy whose plugin needs a CRD the cluster does not serve
// (directly, or through the scheduler profile SchedulerSimulation simulates) makes the binary exit
// non-zero within 30 s, naming the CRD and the plugin.
func TestMissingCRDStopsTheDescheduler(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := descheduler(t)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	schedConfig := write(t, dir, "scheduler.yaml", `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: accord-scheduler
  plugins:
    filter: {enabled: [{name: NodeCRDResourceFit}]}
`)
	for _, tc := range []struct {
		name, plugins string
		args          []string
		want          []string
	}{
		{"LowNodeLoad", "balance: {enabled: [LowNodeLoad]}", nil, []string{"nodemetrics.slo.accord.dev", "plugin \\\"LowNodeLoad\\\""}},
		{"NodeCRDResourceFit", "deschedule: {enabled: [NodeCRDResourceFit]}", nil, []string{"clusterscopedresources.scheduling.accord.dev", "NodeCRDResourceFit"}},
		{"simulated NodeCRDResourceFit", "deschedule: {enabled: [RemoveFailedPods]}", []string{"--scheduler-config-file=" + schedConfig},
			[]string{"clusterscopedresources.scheduling.accord.dev", "NodeCRDResourceFit", "profile \\\"accord-scheduler\\\""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			policy := write(t, t.TempDir(), "policy.yaml", "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: p\n  plugins:\n    "+tc.plugins+"\n")
			args := append([]string{"--kubeconfig=" + kubeconfig, "--policy-config-file=" + policy, "--descheduling-interval=1m", "--secure-port=0"}, tc.args...)
			expectExit(t, bin, args, tc.want...)
		})
	}
}

// TestSchedulerWithoutCRDs: accord-scheduler with kube-scheduler's default profile (no Accord plugin
// enabled) places a pod on a cluster without Accord's CRDs; a profile that enables
// NodeCRDResourceFit makes it exit non-zero within 30 s naming the CRD and the plugin.
func TestSchedulerWithoutCRDs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := harness.BuildBinary(t, "github.com/accord-sched/accord/cmd/scheduler")
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}

	t.Run("default profile schedules", func(t *testing.T) {
		ns := env.CreateNamespace(t, "nocrd-sched")
		node := ns + "-n"
		if _, err := env.Nodes.CreateNode(ctx, harness.NodeSpec{Name: node}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{}) })
		if err := env.Nodes.WaitForNodesReady(ctx, node); err != nil {
			t.Fatal(err)
		}
		harness.StartBinary(t, ctx, bin, "--kubeconfig="+kubeconfig, "--leader-elect=false", "--secure-port=0")
		pod, err := env.Client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p"},
			Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0), NodeSelector: map[string]string{corev1.LabelHostname: node},
				Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for {
			got, err := env.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			if err == nil && got.Spec.NodeName == node {
				break
			}
			if time.Since(start) > 90*time.Second {
				t.Fatalf("the pod was not scheduled within 90s (%v)", err)
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Logf("pod bound %s after it was created", time.Since(start).Round(time.Millisecond))
	})

	t.Run("NodeCRDResourceFit needs its CRD", func(t *testing.T) {
		config := write(t, dir, "scheduler.yaml", fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: %q}
leaderElection: {leaderElect: false}
profiles:
- schedulerName: accord-scheduler
  plugins:
    filter: {enabled: [{name: NodeCRDResourceFit}]}
`, kubeconfig))
		expectExit(t, bin, []string{"--config=" + config, "--secure-port=0"}, "clusterscopedresources.scheduling.accord.dev", "NodeCRDResourceFit")
	})
}
