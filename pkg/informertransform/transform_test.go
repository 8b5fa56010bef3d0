package informertransform

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/client-go/tools/cache"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
)

// fullPod sets every field a descheduler plugin, nodeFit, the evictor or the simulated scheduler
// reads: owners, labels, annotations, priority, affinity, tolerations, topology spread, volumes,
// requests, overhead, and the status (phase, conditions, container states and restart counts).
func fullPod() *corev1.Pod {
	started := metav1.Unix(1700000000, 0)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "p", UID: types.UID("uid-p"), ResourceVersion: "42", Generation: 3,
			CreationTimestamp: started, DeletionTimestamp: &started,
			Labels:          map[string]string{"app": "web"},
			Annotations:     map[string]string{"descheduler.alpha.kubernetes.io/evict": "true", "kubernetes.io/config.mirror": "x"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs-uid", Controller: new(true)}},
			Finalizers:      []string{"f"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply,
				APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}}},
		},
		Spec: corev1.PodSpec{
			NodeName: "n1", SchedulerName: "accord-scheduler", PriorityClassName: "high", Priority: new(int32(1000)),
			NodeSelector: map[string]string{"zone": "a"},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "k", Operator: corev1.NodeSelectorOpIn, Values: []string{"v"}}}}}}}},
			Tolerations:               []corev1.Toleration{{Key: "t", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}},
			Volumes:                   []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			Overhead:                  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")},
			InitContainers:            []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}}},
			Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{HostPort: 80, ContainerPort: 80}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBurstable, StartTime: &started, Reason: "r",
			Conditions:            []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", RestartCount: 2}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "c", RestartCount: 7, Ready: true,
				State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}}},
		},
	}
}

func TestStripManagedFieldsKeepsEverythingElse(t *testing.T) {
	var _ cache.TransformFunc = StripManagedFields
	pod := fullPod()
	want := pod.DeepCopy()
	want.ManagedFields = nil
	got, err := StripManagedFields(pod)
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("pod changed beyond managedFields:\n%s", diff.Diff(want, got))
	}

	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a"}, ManagedFields: pod.DeepCopy().ManagedFields},
		Spec:       corev1.NodeSpec{Unschedulable: true, Taints: []corev1.Taint{{Key: "t", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Images:      []corev1.ContainerImage{{Names: []string{"img"}, SizeBytes: 1 << 20}},
		},
	}
	wantNode := node.DeepCopy()
	wantNode.ManagedFields = nil
	if got, _ := StripManagedFields(node); !equality.Semantic.DeepEqual(got, wantNode) {
		t.Errorf("node changed beyond managedFields:\n%s", diff.Diff(wantNode, got))
	}

	csr := &schedv1alpha1.ClusterScopedResource{ObjectMeta: metav1.ObjectMeta{Name: "n1", ManagedFields: pod.DeepCopy().ManagedFields}}
	if got, _ := StripManagedFields(csr); got.(*schedv1alpha1.ClusterScopedResource).ManagedFields != nil {
		t.Error("ClusterScopedResource kept its managedFields")
	}

	tomb := cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: fullPod()}
	if got, err := StripManagedFields(tomb); err != nil || !equality.Semantic.DeepEqual(got, tomb) {
		t.Errorf("a tombstone must pass unchanged: got %v, %v", got, err)
	}
}
