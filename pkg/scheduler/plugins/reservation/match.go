package reservation

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	resourcehelper "k8s.io/component-helpers/resource"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	schedlisters "github.com/accord-sched/accord/pkg/generated/listers/scheduling/v1alpha1"
)

// DefaultSchedulerName is the profile a template without spec.schedulerName is placed with.
const DefaultSchedulerName = corev1.DefaultSchedulerName

// Matches reports whether pod may consume r: same namespace, created after r, and matching one of
// r's owners (by name, or by its controller's UID).
func Matches(r *schedv1alpha1.Reservation, pod *corev1.Pod) bool {
	if pod.Namespace != r.Namespace || pod.CreationTimestamp.Before(&r.CreationTimestamp) {
		return false
	}
	ref := metav1.GetControllerOf(pod)
	for _, o := range r.Spec.Owners {
		if o.Pod != nil && o.Pod.Name == pod.Name {
			return true
		}
		if o.Controller != nil && ref != nil && ref.UID == o.Controller.UID {
			return true
		}
	}
	return false
}

// TTL is r's time to live (spec.ttl or DefaultReservationTTL).
func TTL(r *schedv1alpha1.Reservation) time.Duration {
	if r.Spec.TTL != nil {
		return r.Spec.TTL.Duration
	}
	return schedv1alpha1.DefaultReservationTTL
}

// ExpireTime is when r expires: status.expireTime once set, else its creation time plus its TTL.
func ExpireTime(r *schedv1alpha1.Reservation) time.Time {
	if r.Status.ExpireTime != nil {
		return r.Status.ExpireTime.Time
	}
	return r.CreationTimestamp.Add(TTL(r))
}

// Holding reports whether r holds room on a node at now: Available, placed and not expired.
func Holding(r *schedv1alpha1.Reservation, now time.Time) bool {
	return r.Status.Phase == schedv1alpha1.ReservationAvailable && r.Status.NodeName != "" && now.Before(ExpireTime(r))
}

// PodOf is the pod a reservation stands for: its template, in its namespace, named after it. The
// scheduler places it as it would place this pod.
func PodOf(r *schedv1alpha1.Reservation) *corev1.Pod {
	t := r.Spec.Template.DeepCopy()
	pod := &corev1.Pod{ObjectMeta: t.ObjectMeta, Spec: t.Spec}
	pod.Namespace = r.Namespace
	pod.Name = "reservation-" + r.Name
	pod.UID = "reservation-" + r.UID
	pod.OwnerReferences = nil
	pod.Spec.NodeName = ""
	if pod.Spec.SchedulerName == "" {
		pod.Spec.SchedulerName = DefaultSchedulerName
	}
	return pod
}

// Requests is what r holds on its node: the requests of its pod (resourcehelper.PodRequests, as the
// scheduler counts a pod's), plus one pod.
func Requests(r *schedv1alpha1.Reservation) corev1.ResourceList {
	return resourcehelper.PodRequests(PodOf(r), resourcehelper.PodResourcesOptions{})
}

// holdingByNode lists the reservations holding room at now, by node, in name order; the one pod
// matches (if any, the first by namespace/name) is returned apart and not counted.
func holdingByNode(lister schedlisters.ReservationLister, pod *corev1.Pod, now time.Time) (map[string][]*schedv1alpha1.Reservation, *schedv1alpha1.Reservation, error) {
	all, err := lister.List(labels.Everything())
	if err != nil {
		return nil, nil, fmt.Errorf("listing reservations: %w", err)
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].Namespace != all[j].Namespace {
			return all[i].Namespace < all[j].Namespace
		}
		return all[i].Name < all[j].Name
	})
	var own *schedv1alpha1.Reservation
	byNode := map[string][]*schedv1alpha1.Reservation{}
	for _, r := range all {
		if !Holding(r, now) {
			continue
		}
		if own == nil && Matches(r, pod) {
			own = r
			continue
		}
		byNode[r.Status.NodeName] = append(byNode[r.Status.NodeName], r)
	}
	return byNode, own, nil
}
