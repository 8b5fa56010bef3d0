package reliability

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
	"github.com/accord-sched/accord/pkg/scheduler/server"
	"github.com/accord-sched/accord/test/harness"
)

// The kube-apiserver of a control plane of its own is stopped for 3 s and started again on the same
// etcd and address while accord-scheduler and accord-descheduler (in-process, each with its own
// context) run against it: neither stops, the scheduler places the pods created after the restart,
// and the descheduler acts on a CR change made after it.
func TestAPIServerRestart(t *testing.T) {
	ctx := context.Background()
	e, err := harness.Start(ctx, harness.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	ns := "restart"
	if _, err := e.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nodes := []string{"r1", "r2"}
	for _, n := range nodes {
		if _, err := e.Nodes.CreateNode(ctx, harness.NodeSpec{Name: n}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Accord.SchedulingV1alpha1().ClusterScopedResources().Create(ctx, &schedv1alpha1.ClusterScopedResource{
			ObjectMeta: metav1.ObjectMeta{Name: n},
			Spec:       schedv1alpha1.ClusterScopedResourceSpec{ResourcesFilter: map[corev1.ResourceName]bool{corev1.ResourceCPU: true, corev1.ResourceMemory: true}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Nodes.WaitForNodesReady(ctx, nodes...); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := e.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	_, file, _, _ := runtime.Caller(0)
	schedulerConfig := filepath.Join(filepath.Dir(file), "..", "..", "manifests", "scheduler", "config.yaml")
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(`apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: restart
  pluginConfig:
  - name: DefaultEvictor
  - name: NodeCRDResourceFit
  plugins:
    deschedule:
      enabled: [NodeCRDResourceFit]
    preEvictionFilter:
      disabled: [SchedulerSimulation]
`), 0o644); err != nil {
		t.Fatal(err)
	}

	runCtx, cancel := context.WithCancel(ctx)
	schedDone, deschedDone := make(chan error, 1), make(chan error, 1)
	ready := make(chan struct{})
	go func() { schedDone <- server.RunInProcess(runCtx, kubeconfig, schedulerConfig) }()
	go func() {
		deschedDone <- runner.Run(runCtx, runner.Config{RestConfig: e.Config, PolicyConfigFile: policy, DeschedulingInterval: time.Second,
			EventDriven: true, OnReady: func() { close(ready) }})
	}()
	t.Cleanup(func() {
		cancel()
		for name, ch := range map[string]chan error{"scheduler": schedDone, "descheduler": deschedDone} {
			select {
			case err := <-ch:
				if err != nil {
					t.Errorf("%s: %v", name, err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("%s did not stop", name)
			}
		}
	})
	select {
	case <-ready:
	case err := <-deschedDone:
		t.Fatalf("descheduler stopped: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("descheduler not ready")
	}

	seq := 0
	create := func(n int) []string {
		var names []string
		for range n {
			name := fmt.Sprintf("r%02d", seq)
			seq++
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: types.UID("rs-restart")}}},
				Spec: corev1.PodSpec{SchedulerName: "accord-scheduler", Containers: []corev1.Container{{Name: "c", Image: "pause",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}}}}},
			}
			if _, err := e.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			names = append(names, name)
		}
		return names
	}
	scheduled := func(names []string, within time.Duration) map[string]string {
		t.Helper()
		where := map[string]string{}
		if err := harness.WaitFor(ctx, within, func(ctx context.Context) (bool, error) {
			for _, n := range names {
				p, err := e.Client.CoreV1().Pods(ns).Get(ctx, n, metav1.GetOptions{})
				if err != nil || p.Spec.NodeName == "" {
					return false, err
				}
				where[n] = p.Spec.NodeName
			}
			return true, nil
		}); err != nil {
			t.Fatalf("pods %v not scheduled within %s", names, within)
		}
		return where
	}
	scheduled(create(3), 30*time.Second)

	// The outage.
	if err := e.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if err := e.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	after := create(5)
	where := scheduled(after, 60*time.Second)
	placedIn := time.Since(restarted)

	// A CR change after the restart: the descheduler evicts the pods the node no longer fits.
	victimNode := where[after[0]]
	var victims []string
	for _, n := range after {
		if where[n] == victimNode {
			victims = append(victims, n)
		}
	}
	changed := time.Now()
	if _, err := e.Accord.SchedulingV1alpha1().ClusterScopedResources().Patch(ctx, victimNode, types.MergePatchType,
		[]byte(`{"spec":{"resourcesFilter":{"cpu":false}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitFor(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		for _, n := range victims {
			p, err := e.Client.CoreV1().Pods(ns).Get(ctx, n, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil || p.DeletionTimestamp == nil {
				return false, err
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("pods %v on %s not evicted after the CR change: %v", victims, victimNode, err)
	}
	evictedIn := time.Since(changed)
	for name, ch := range map[string]chan error{"scheduler": schedDone, "descheduler": deschedDone} {
		select {
		case err := <-ch:
			t.Fatalf("%s stopped across the apiserver restart: %v", name, err)
		default:
		}
	}
	figure(t, "apiserver_restart", "3s outage: scheduler placed the %d pods created after the restart in %.1fs; descheduler evicted %d pods %.1fs after a CR change; neither restarted",
		len(after), placedIn.Seconds(), len(victims), evictedIn.Seconds())
}
