package informertransform

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestGuardFindsWrites: a write to a pod the transform handed out, even to a map or slice PodSharer
// shares between pods, is reported; reading (a Quantity's String caches its text) is not.
func TestGuardFindsWrites(t *testing.T) {
	g := NewGuard(NewPodSharer().Transform)
	a, b := fullPod(), fullPod()
	a.Name, b.Name = "a", "b"
	ga, _ := g.Transform(a)
	gb, _ := g.Transform(b)
	pa, pb := ga.(*corev1.Pod), gb.(*corev1.Pod)
	q := pa.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
	_ = q.String()
	if w := g.Written(); len(w) > 0 {
		t.Fatalf("nothing written, Written = %v", w)
	}
	// PodSharer made both pods share their labels: a write through one is a write to both.
	pb.Labels["written"] = "yes"
	if w := g.Written(); !slices.Contains(w, "*v1.Pod ns/a") || !slices.Contains(w, "*v1.Pod ns/b") {
		t.Fatalf("Written = %v, want both pods", w)
	}
	delete(pb.Labels, "written")
	pa.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("3")
	if w := g.Written(); len(w) == 0 {
		t.Fatal("a changed request is not reported")
	}
}
