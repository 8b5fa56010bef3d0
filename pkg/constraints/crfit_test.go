package constraints

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
)

// TestFitCRAnyScheduler: the scheduler's rule (FitCR) but for a pod requesting nothing on a node
// without a CR, which fits; each verdict in its one wording.
func TestFitCRAnyScheduler(t *testing.T) {
	gpuOnly := &schedv1alpha1.ClusterScopedResource{ObjectMeta: metav1.ObjectMeta{Name: "n"},
		Spec: schedv1alpha1.ClusterScopedResourceSpec{ResourcesFilter: map[corev1.ResourceName]bool{"example.com/gpu": true}}}
	cpu := []corev1.ResourceName{corev1.ResourceCPU}
	for _, tc := range []struct {
		name          string
		csr           *schedv1alpha1.ClusterScopedResource
		requested     []corev1.ResourceName
		ignoreMissing bool
		wantFitCR     bool // FitCR's Rejected
		want          bool // FitCRAnyScheduler's Rejected
		reason        string
	}{
		{"no CR, pod requests cpu", nil, cpu, false, true, true, "node has no ClusterScopedResource"},
		{"no CR, pod requests nothing", nil, nil, false, true, false, ""},
		{"no CR under Ignore", nil, cpu, true, false, false, ""},
		{"CR lacks cpu", gpuOnly, cpu, false, true, true, "ClusterScopedResource does not enable cpu"},
		{"CR, pod requests nothing", gpuOnly, nil, false, false, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FitCR(tc.csr, tc.requested, tc.ignoreMissing); got.Rejected != tc.wantFitCR {
				t.Errorf("FitCR rejected %v, want %v", got.Rejected, tc.wantFitCR)
			}
			got := FitCRAnyScheduler(tc.csr, tc.requested, tc.ignoreMissing)
			if got.Rejected != tc.want || got.Reason() != tc.reason {
				t.Errorf("FitCRAnyScheduler = %v %q, want %v %q", got.Rejected, got.Reason(), tc.want, tc.reason)
			}
		})
	}
}
