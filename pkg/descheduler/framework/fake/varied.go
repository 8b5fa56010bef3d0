package fake

import (
	"fmt"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/accord-sched/accord/pkg/informertransform"
)

// VariedCluster is a seeded random cluster that gives every descheduler plugin that reads pods
// work: zones, tainted and labelled nodes, ReplicaSet replicas with required node affinity,
// anti-affinity and spread constraints, restarts, failed, waiting and pods up to three days old
// (at now), local storage, claims, host ports and init containers. Every pod also has every field
// informertransform.TrimPod drops (FillTrimmed), for the tests that compare decisions over these
// pods and over the same pods trimmed.
func VariedCluster(seed uint64, now time.Time) []runtime.Object {
	r := rand.New(rand.NewPCG(seed, 1))
	var objs []runtime.Object
	const nodes = 8
	for i := range nodes {
		n := Node(fmt.Sprintf("n%d", i), map[string]string{
			corev1.LabelHostname: fmt.Sprintf("n%d", i), corev1.LabelTopologyZone: fmt.Sprintf("z%d", i%3),
		}, 8, 32)
		if i%4 == 1 {
			n.Labels["pool"] = "x"
		}
		switch i % 5 {
		case 2:
			n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}}
		case 3:
			n.Spec.Taints = []corev1.Taint{{Key: "spot", Value: "true", Effect: corev1.TaintEffectPreferNoSchedule}}
		}
		n.Status.Images = []corev1.ContainerImage{{Names: []string{"img:1"}, SizeBytes: 500 << 20}}
		objs = append(objs, n)
	}
	for i := range 70 {
		g := r.IntN(12)
		app := fmt.Sprintf("app%d", g)
		// Half the pods on the first two nodes: LowNodeUtilization has work.
		node := r.IntN(nodes)
		if r.IntN(2) == 0 {
			node = r.IntN(2)
		}
		p := Pod("ns", fmt.Sprintf("p%02d", i), fmt.Sprintf("n%d", node), int64(100+100*r.IntN(4)))
		p.UID = types.UID(fmt.Sprintf("uid-%d", i))
		p.Labels = map[string]string{"app": app}
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app, UID: types.UID("rs-" + app), Controller: new(true)}}
		// Ages half an hour off the whole hours: PodLifeTime's 24h limit is no tie.
		p.CreationTimestamp = metav1.NewTime(now.Add(-time.Duration(r.IntN(72))*time.Hour - 30*time.Minute))
		p.Status.StartTime = &p.CreationTimestamp
		c := &p.Spec.Containers[0]
		c.Image = "img:1"
		c.Resources.Requests[corev1.ResourceMemory] = *resource.NewQuantity(int64(1+r.IntN(4))<<28, resource.BinarySI)
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", Ready: true, Image: "img:1",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: p.CreationTimestamp}}}}
		sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
		switch g % 6 {
		case 0:
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"x"}}}}}}}}
		case 1:
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: sel, TopologyKey: corev1.LabelHostname}}}}
		case 2:
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
				WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel}}
		case 3:
			p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		}
		switch r.IntN(10) {
		case 0:
			p.Status.ContainerStatuses[0].RestartCount = 150
		case 1:
			p.Status.Phase = corev1.PodFailed
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 137}}
		case 2:
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
		case 3:
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		case 4:
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-" + app}}})
		case 5:
			c.Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
		case 6:
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "img:1", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", RestartCount: 120,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}}}
		case 7:
			// Pinned to its node: it fits no other (nodeFit keeps it). Its own owner: which replica
			// of a duplicate a plugin moves must not depend on whether it saw the pinned one first.
			p.Labels = map[string]string{"app": p.Name}
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: p.Name, UID: types.UID("rs-" + p.Name), Controller: new(true)}}
			p.Spec.TopologySpreadConstraints, p.Spec.Tolerations = nil, nil
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{p.Spec.NodeName}}}}}}}}
		}
		// The service account token volume every pod has, then every field TrimPod drops.
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "kube-api-access"})
		informertransform.FillTrimmed(p)
		objs = append(objs, p)
	}
	return objs
}
