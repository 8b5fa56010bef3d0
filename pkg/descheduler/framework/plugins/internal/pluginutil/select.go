package pluginutil

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

// PodSelector is the pod selection of the upstream `namespaces` and `labelSelector` args.
//
// +k8s:deepcopy-gen=false
type PodSelector struct {
	include, exclude []string
	labels           labels.Selector
}

// NewPodSelector builds a selector from the (validated) args; ns and sel may be nil.
func NewPodSelector(ns *Namespaces, sel *metav1.LabelSelector) (*PodSelector, error) {
	s := &PodSelector{labels: labels.Everything()}
	if ns != nil {
		s.include, s.exclude = ns.Include, ns.Exclude
	}
	if sel != nil {
		ls, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			return nil, fmt.Errorf("labelSelector: %w", err)
		}
		s.labels = ls
	}
	return s, nil
}

// NamespaceOK reports whether the namespaces arg lets the plugin look at namespace.
func (s *PodSelector) NamespaceOK(namespace string) bool {
	if len(s.include) > 0 {
		return slices.Contains(s.include, namespace)
	}
	return !slices.Contains(s.exclude, namespace)
}

// Matches reports whether pod is in a selected namespace and matches the label selector.
func (s *PodSelector) Matches(pod *corev1.Pod) bool {
	return s.NamespaceOK(pod.Namespace) && (s.labels.Empty() || s.labels.Matches(labels.Set(pod.Labels)))
}

// Candidates returns a pod filter for Handle.GetPodsAssignedToNode: pods the selector matches,
// that have not finished (unless includeFinished), and that the profile's evictor Filter lets go.
// extra, when not nil, must also hold.
func (s *PodSelector) Candidates(ev framework.Evictor, includeFinished bool, extra framework.PodFilter) framework.PodFilter {
	return func(pod *corev1.Pod) bool {
		if !includeFinished && (pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed) {
			return false
		}
		if !s.Matches(pod) {
			return false
		}
		if extra != nil && !extra(pod) {
			return false
		}
		return ev.Filter(pod)
	}
}

// IsFinished reports whether a pod has succeeded or failed.
func IsFinished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}
