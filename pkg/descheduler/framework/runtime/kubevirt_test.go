package runtime_test

import (
	"context"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/utils/ptr"

	"github.com/accord-sched/accord/pkg/descheduler/evictions"
	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins"
	fwruntime "github.com/accord-sched/accord/pkg/descheduler/framework/runtime"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
	"github.com/accord-sched/accord/pkg/descheduler/policy"
)

// kubeVirtExample is the policy example of pkg/descheduler/README.md's "Evictions in background".
const kubeVirtExample = "../../policy/testdata/kubevirt-vms.yaml"

// TestKubeVirtSinglePodVM: a KubeVirt VM runs in one virt-launcher pod (controlled by its
// VirtualMachineInstance, annotated request-evict-only, with emptyDir volumes). On a node tainted
// for maintenance, the README's policy example with EvictionsInBackground requests its eviction,
// which KubeVirt's webhook answers 429 "Eviction triggered evacuation": a background eviction. The
// same policy without evictSingleReplicaWorkloads holds the VM (the workload budget's default), and
// the example's labelSelector leaves other pods alone.
func TestKubeVirtSinglePodVM(t *testing.T) {
	doc, err := os.ReadFile(kubeVirtExample)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		doc        string
		background float64
		held       bool
	}{
		{"example", string(doc), 1, false},
		{"default budget", strings.Replace(string(doc), "evictSingleReplicaWorkloads: true", "evictSingleReplicaWorkloads: false", 1), 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.held && !strings.Contains(tc.doc, "evictSingleReplicaWorkloads: false") {
				t.Fatal("the example no longer sets evictSingleReplicaWorkloads: true")
			}
			n1 := fake.Node("n1", nil, 8, 16)
			n1.Spec.Taints = []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule}}
			vm := fake.Pod("ns", "virt-launcher-vm1-abcde", "n1", 100)
			vm.Labels = map[string]string{"kubevirt.io": "virt-launcher"}
			vm.Annotations = map[string]string{evictions.RequestEvictOnlyAnnotation: ""}
			vm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance", Name: "vm1", UID: "vmi-uid", Controller: ptr.To(true)}}
			vm.Spec.Volumes = []corev1.Volume{{Name: "private", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			vm.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
			web := fake.Pod("ns", "web-1", "n1", 100)
			c := fake.NewCluster(n1, fake.Node("n2", nil, 8, 16), vm, web)
			c.RefuseEviction = func(ev *policyv1.Eviction) error {
				if ev.Name == vm.Name {
					return apierrors.NewTooManyRequests(`admission webhook "virt-launcher-eviction-interceptor.kubevirt.io" denied the request: Eviction triggered evacuation of VMI "ns/vm1"`, 0)
				}
				return nil
			}
			reg, args := plugins.NewInTreeRegistry(), plugins.NewInTreeArgs()
			p, err := policy.Decode([]byte(tc.doc), args)
			if err != nil {
				t.Fatal(err)
			}
			if errs := policy.Validate(p, reg, args); len(errs) > 0 {
				t.Fatal(errs)
			}
			d, err := fwruntime.New(t.Context(), p, fwruntime.Options{Client: c.Client, InformerFactory: c.Factory, AccordInformerFactory: c.CRs,
				Registry: reg, Metrics: metrics.New(), EvictionsInBackground: true})
			if err != nil {
				t.Fatal(err)
			}
			startSynced(t, c, d)
			d.RunCycle(context.Background())
			if got := c.Evictions(); len(got) != 0 {
				t.Errorf("evicted %v; want none (web-1 is no VM, the VM migrates in background)", got)
			}
			if v, _ := testutil.GetCounterMetricValue(d.Metrics().PodsEvicted.WithLabelValues(metrics.ResultBackground, "RemovePodsViolatingNodeTaints", "vms", "ns", "n1")); v != tc.background {
				t.Errorf("background evictions %v, want %v", v, tc.background)
			}
			held, _ := testutil.GetCounterMetricValue(d.Metrics().EvictionsHeld.WithLabelValues(metrics.HeldWorkloadBudget, "vms"))
			if (held > 0) != tc.held {
				t.Errorf("held by the workload budget %v times, want held: %v", held, tc.held)
			}
		})
	}
}
