package pluginutil

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// TestPodRequestMatchesComponentHelpers checks the allocation-free path against PodRequests.
func TestPodRequestMatchesComponentHelpers(t *testing.T) {
	rl := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	}
	c := func(r corev1.ResourceList) corev1.Container {
		return corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: r}}
	}
	cases := map[string]*corev1.Pod{
		"containers":  {Spec: corev1.PodSpec{Containers: []corev1.Container{c(rl("250m", "1Gi")), c(rl("1", "512Mi"))}}},
		"init larger": {Spec: corev1.PodSpec{InitContainers: []corev1.Container{c(rl("3", "1Mi"))}, Containers: []corev1.Container{c(rl("1", "1Gi"))}}},
		"overhead":    {Spec: corev1.PodSpec{Overhead: rl("100m", "10Mi"), Containers: []corev1.Container{c(rl("1", "1Gi"))}}},
		"pod-level":   {Spec: corev1.PodSpec{Resources: &corev1.ResourceRequirements{Requests: rl("4", "8Gi")}, Containers: []corev1.Container{c(rl("1", "1Gi"))}}},
		"no requests": {Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}},
		"only memory": {Spec: corev1.PodSpec{Containers: []corev1.Container{c(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("3Gi")})}}},
	}
	resources := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods}
	for name, pod := range cases {
		t.Run(name, func(t *testing.T) {
			got := PodRequest(pod, resources)
			want := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
			for _, r := range resources[:2] {
				q := want[r]
				if got[r] != q.MilliValue() {
					t.Errorf("%s: %d, want %d", r, got[r], q.MilliValue())
				}
			}
			if got[corev1.ResourcePods] != 1000 {
				t.Errorf("pods: %d", got[corev1.ResourcePods])
			}
		})
	}
}
