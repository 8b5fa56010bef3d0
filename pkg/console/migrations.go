package console

import (
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
)

// MigrationView is one PodMigration (issue #28's on-demand move of a pod): its spec and progress.
type MigrationView struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Pod       string `json:"pod"`
	// Phase is Pending until the descheduler picks it up, then Running, Succeeded, Failed or Aborted.
	Phase   string `json:"phase"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// SourceNode is where the pod ran; TargetNode the node asked for or predicted.
	SourceNode  string `json:"sourceNode,omitempty"`
	TargetNode  string `json:"targetNode,omitempty"`
	Reservation string `json:"reservation,omitempty"`
	// Replacement is the pod that consumed the migration's reservation; ReplacementNode is the node
	// the console sees it bound to (the node the migration recorded while the console has not seen
	// it bound), so the row shows the reservation's node (TargetNode) next to where its replacement
	// really runs.
	Replacement     string `json:"replacement,omitempty"`
	ReplacementNode string `json:"replacementNode,omitempty"`
	// Created is when the PodMigration was created.
	Created time.Time `json:"created"`
}

// migrationViews lists the PodMigrations, newest first (then by namespace/name); none when the
// cluster does not serve the PodMigration CRD (lister nil).
func (s *state) migrationViews() []MigrationView {
	out := []MigrationView{}
	if s.migrations == nil {
		return out
	}
	ms, _ := s.migrations.List(labels.Everything())
	slices.SortFunc(ms, func(a, b *schedv1alpha1.PodMigration) int {
		if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	for _, m := range ms {
		phase := string(m.Status.Phase)
		if phase == "" {
			phase = string(schedv1alpha1.PodMigrationPending)
		}
		target := m.Status.TargetNode
		if target == "" {
			target = m.Spec.TargetNode
		}
		replacementNode := m.Status.ReplacementNode
		if m.Status.ReplacementPod != "" {
			// A StatefulSet's replacement keeps the moved pod's name: only another UID is the replacement.
			if p, err := s.pods.Pods(m.Namespace).Get(m.Status.ReplacementPod); err == nil && p.UID != m.Status.PodUID && p.Spec.NodeName != "" {
				replacementNode = p.Spec.NodeName
			}
		}
		out = append(out, MigrationView{Namespace: m.Namespace, Name: m.Name, Pod: m.Spec.PodName, Phase: phase,
			Reason: m.Status.Reason, Message: m.Status.Message, SourceNode: m.Status.SourceNode, TargetNode: target,
			Reservation: m.Status.ReservationName, Replacement: m.Status.ReplacementPod, ReplacementNode: replacementNode,
			Created: m.CreationTimestamp.Time})
	}
	return out
}
