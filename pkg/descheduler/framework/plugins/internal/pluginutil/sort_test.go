package pluginutil

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// TestSortByPriorityLowToHigh checks the keyed sort against a stable sort with the comparator.
func TestSortByPriorityLowToHigh(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 50 {
		pods := make([]*corev1.Pod, r.IntN(40))
		for i := range pods {
			p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
			p.Name = fmt.Sprint(i)
			if r.IntN(4) > 0 {
				p.Spec.Priority = ptr.To(int32(r.IntN(3) * 100))
			}
			switch r.IntN(4) {
			case 0: // BestEffort
			case 1:
				p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
			case 2:
				q := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
				p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: q, Limits: q}
			case 3:
				p.Status.QOSClass = corev1.PodQOSGuaranteed
			}
			pods[i] = p
		}
		want := slices.Clone(pods)
		slices.SortStableFunc(want, ComparePriorityLowToHigh)
		SortByPriorityLowToHigh(pods)
		if !slices.Equal(pods, want) {
			t.Fatalf("round %d: order differs from the comparator's stable sort", round)
		}
	}
}
