package evictions

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// Workload is the top controller of a pod: the unit a workload budget counts over.
type Workload struct {
	Kind, Namespace, Name string
	UID                   types.UID
	// Replicas is the desired number of pods (a Job's parallelism); for an owner of another kind,
	// the number of its pods that are not terminating.
	Replicas int
}

func (w Workload) String() string { return fmt.Sprintf("%s %s/%s", w.Kind, w.Namespace, w.Name) }

// WorkloadSource finds a pod's workload and the workload's pods.
type WorkloadSource interface {
	// Workload returns the pod's workload and all its pods; ok is false for a pod without a
	// controller, or whose controller (or a ReplicaSet's Deployment) does not exist in the synced
	// caches: no controller replaces such a pod, so there is no workload to keep available.
	Workload(pod *corev1.Pod) (w Workload, pods []*corev1.Pod, ok bool)
	// HasSynced reports whether the caches behind it have synced.
	HasSynced() bool
}

// ControllerUIDIndex indexes pods and ReplicaSets by their controller's UID.
const ControllerUIDIndex = "accord-controller-uid"

func controllerUIDIndex(obj any) ([]string, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, nil
	}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil {
		return []string{string(ref.UID)}, nil
	}
	return nil, nil
}

func addControllerIndex(inf cache.SharedIndexInformer) error {
	if _, ok := inf.GetIndexer().GetIndexers()[ControllerUIDIndex]; ok {
		return nil
	}
	return inf.AddIndexers(cache.Indexers{ControllerUIDIndex: controllerUIDIndex})
}

// informerWorkloads resolves workloads from the shared informers: a pod's controller ReplicaSet and
// that ReplicaSet's Deployment, StatefulSet, Job or ReplicationController; any other controller is
// a workload of its own whose replicas are its scale subresource's (ScaleReader), or else its live
// pods; a ReplicaSet controlled by another kind than Deployment belongs to that controller's workload.
type informerWorkloads struct {
	pods, replicaSets cache.Indexer
	deployments       cache.Indexer
	statefulSets      cache.Indexer
	jobs              cache.Indexer
	rcs               cache.Indexer
	// scale reads the desired replicas of an owner of another kind; nil: its live pods count.
	scale  ScaleReader
	synced []cache.InformerSynced
}

// NewInformerWorkloads requests the informers a WorkloadSource needs from factory (pods,
// ReplicaSets, Deployments, StatefulSets, Jobs, ReplicationControllers): start the factory after.
// scale, when not nil, gives the replicas of a workload of any other kind (its scale subresource).
func NewInformerWorkloads(factory informers.SharedInformerFactory, scale ScaleReader) (WorkloadSource, error) {
	pods := factory.Core().V1().Pods().Informer()
	rs := factory.Apps().V1().ReplicaSets().Informer()
	for _, inf := range []cache.SharedIndexInformer{pods, rs} {
		if err := addControllerIndex(inf); err != nil {
			return nil, fmt.Errorf("adding the %s index: %w", ControllerUIDIndex, err)
		}
	}
	dep := factory.Apps().V1().Deployments().Informer()
	sts := factory.Apps().V1().StatefulSets().Informer()
	jobs := factory.Batch().V1().Jobs().Informer()
	rcs := factory.Core().V1().ReplicationControllers().Informer()
	return &informerWorkloads{
		pods: pods.GetIndexer(), replicaSets: rs.GetIndexer(), deployments: dep.GetIndexer(),
		statefulSets: sts.GetIndexer(), jobs: jobs.GetIndexer(), rcs: rcs.GetIndexer(), scale: scale,
		synced: []cache.InformerSynced{pods.HasSynced, rs.HasSynced, dep.HasSynced, sts.HasSynced, jobs.HasSynced, rcs.HasSynced},
	}, nil
}

func (s *informerWorkloads) HasSynced() bool {
	for _, f := range s.synced {
		if !f() {
			return false
		}
	}
	return true
}

func getObj[T any](idx cache.Indexer, ns, name string, uid types.UID) (T, bool) {
	var zero T
	obj, ok, err := idx.GetByKey(ns + "/" + name)
	if err != nil || !ok {
		return zero, false
	}
	t, ok := obj.(T)
	if !ok {
		return zero, false
	}
	if m, isMeta := obj.(metav1.Object); isMeta && m.GetUID() != uid {
		return zero, false
	}
	return t, true
}

func (s *informerWorkloads) podsOf(uid types.UID) []*corev1.Pod {
	objs, _ := s.pods.ByIndex(ControllerUIDIndex, string(uid))
	out := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			out = append(out, p)
		}
	}
	return out
}

func replicasOf(p *int32) int {
	if p == nil {
		return 1
	}
	return int(*p)
}

func (s *informerWorkloads) Workload(pod *corev1.Pod) (Workload, []*corev1.Pod, bool) {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return Workload{}, nil, false
	}
	ns := pod.Namespace
	switch ref.Kind {
	case "ReplicaSet":
		rs, ok := getObj[*appsv1.ReplicaSet](s.replicaSets, ns, ref.Name, ref.UID)
		if !ok {
			return Workload{}, nil, false
		}
		if dref := metav1.GetControllerOfNoCopy(rs); dref != nil && dref.Kind == "Deployment" {
			d, ok := getObj[*appsv1.Deployment](s.deployments, ns, dref.Name, dref.UID)
			if !ok {
				return Workload{}, nil, false
			}
			var pods []*corev1.Pod
			objs, _ := s.replicaSets.ByIndex(ControllerUIDIndex, string(d.UID))
			for _, o := range objs {
				if r, ok := o.(*appsv1.ReplicaSet); ok {
					pods = append(pods, s.podsOf(r.UID)...)
				}
			}
			return Workload{Kind: "Deployment", Namespace: ns, Name: d.Name, UID: d.UID, Replicas: replicasOf(d.Spec.Replicas)}, pods, true
		} else if dref != nil {
			// Another controller of ReplicaSets (an Argo Rollout): the workload is that controller,
			// its pods those of all its ReplicaSets, its replicas its scale or else their sum.
			var pods []*corev1.Pod
			sum := 0
			objs, _ := s.replicaSets.ByIndex(ControllerUIDIndex, string(dref.UID))
			for _, o := range objs {
				if r, ok := o.(*appsv1.ReplicaSet); ok {
					pods = append(pods, s.podsOf(r.UID)...)
					sum += replicasOf(r.Spec.Replicas)
				}
			}
			if n, ok := s.scaleOf(ns, *dref); ok {
				sum = n
			}
			return Workload{Kind: dref.Kind, Namespace: ns, Name: dref.Name, UID: dref.UID, Replicas: sum}, pods, true
		}
		return Workload{Kind: "ReplicaSet", Namespace: ns, Name: rs.Name, UID: rs.UID, Replicas: replicasOf(rs.Spec.Replicas)}, s.podsOf(rs.UID), true
	case "StatefulSet":
		sts, ok := getObj[*appsv1.StatefulSet](s.statefulSets, ns, ref.Name, ref.UID)
		if !ok {
			return Workload{}, nil, false
		}
		return Workload{Kind: "StatefulSet", Namespace: ns, Name: sts.Name, UID: sts.UID, Replicas: replicasOf(sts.Spec.Replicas)}, s.podsOf(sts.UID), true
	case "Job":
		j, ok := getObj[*batchv1.Job](s.jobs, ns, ref.Name, ref.UID)
		if !ok {
			return Workload{}, nil, false
		}
		return Workload{Kind: "Job", Namespace: ns, Name: j.Name, UID: j.UID, Replicas: replicasOf(j.Spec.Parallelism)}, s.podsOf(j.UID), true
	case "ReplicationController":
		rc, ok := getObj[*corev1.ReplicationController](s.rcs, ns, ref.Name, ref.UID)
		if !ok {
			return Workload{}, nil, false
		}
		return Workload{Kind: "ReplicationController", Namespace: ns, Name: rc.Name, UID: rc.UID, Replicas: replicasOf(rc.Spec.Replicas)}, s.podsOf(rc.UID), true
	default:
		pods := s.podsOf(ref.UID)
		live := 0
		for _, p := range pods {
			if p.DeletionTimestamp == nil {
				live++
			}
		}
		if n, ok := s.scaleOf(ns, *ref); ok {
			live = n
		}
		return Workload{Kind: ref.Kind, Namespace: ns, Name: ref.Name, UID: ref.UID, Replicas: live}, pods, true
	}
}

// scaleOf reads owner's desired replicas from its scale subresource (bounded to 5 s).
func (s *informerWorkloads) scaleOf(ns string, owner metav1.OwnerReference) (int, bool) {
	if s.scale == nil {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.scale(ctx, ns, owner)
}
