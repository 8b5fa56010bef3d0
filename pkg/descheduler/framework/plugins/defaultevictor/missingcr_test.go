package defaultevictor

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/apis/config"
	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/constraints"
	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
)

// TestNodeFitMissingCRPolicy checks nodeFit's ClusterScopedResource verdict under both policies.
func TestNodeFitMissingCRPolicy(t *testing.T) {
	gpu := corev1.ResourceName("example.com/gpu")
	cpuPod := fake.Pod("ns", "cpu", "home", 500)
	nothing := fake.Pod("ns", "nothing", "home", 0)
	nothing.Spec.Containers[0].Resources.Requests = nil
	cases := []struct {
		name    string
		policy  config.MissingCRPolicy
		csr     []corev1.ResourceName // nil: no ClusterScopedResource
		pod     *corev1.Pod
		want    bool
		wantWhy string
	}{
		{"Reject, no CR", config.MissingCRPolicyReject, nil, cpuPod, false, "node has no ClusterScopedResource"},
		// Unlike the scheduler's Filter: nodeFit also judges pods kube-scheduler places (see crViolation).
		{"Reject, no CR, pod requests nothing", config.MissingCRPolicyReject, nil, nothing, true, ""},
		{"Reject, CR enables cpu", config.MissingCRPolicyReject, []corev1.ResourceName{corev1.ResourceCPU}, cpuPod, true, ""},
		{"Reject, CR lacks cpu", config.MissingCRPolicyReject, []corev1.ResourceName{gpu}, cpuPod, false, "ClusterScopedResource does not enable cpu"},
		{"Ignore, no CR", config.MissingCRPolicyIgnore, nil, cpuPod, true, ""},
		{"Ignore, no CR, pod requests nothing", config.MissingCRPolicyIgnore, nil, nothing, true, ""},
		{"Ignore, CR enables cpu", config.MissingCRPolicyIgnore, []corev1.ResourceName{corev1.ResourceCPU}, cpuPod, true, ""},
		{"Ignore, CR lacks cpu", config.MissingCRPolicyIgnore, []corev1.ResourceName{gpu}, cpuPod, false, "ClusterScopedResource does not enable cpu"},
		{"Ignore, empty CR, pod requests nothing", config.MissingCRPolicyIgnore, []corev1.ResourceName{}, nothing, true, ""},
		{"unset policy is Reject", "", nil, cpuPod, false, "node has no ClusterScopedResource"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := fake.Node("x", nil, 2, 4)
			// Through the DefaultEvictor's args, with the informers started: its fitter's verdict and
			// reason, and the PreEvictionFilter that uses it.
			objs := []*corev1.Node{fake.Node("home", nil, 2, 4), n}
			c := fake.NewCluster(objs[0], objs[1], tc.pod)
			if tc.csr != nil {
				f := map[corev1.ResourceName]bool{}
				for _, r := range tc.csr {
					f[r] = true
				}
				if err := c.Accord.Tracker().Add(&schedv1alpha1.ClusterScopedResource{ObjectMeta: metav1.ObjectMeta{Name: "x"},
					Spec: schedv1alpha1.ClusterScopedResourceSpec{ResourcesFilter: f}}); err != nil {
					t.Fatal(err)
				}
			}
			d := newEvictor(t, c, &DefaultEvictorArgs{NodeFit: true, MissingCRPolicy: tc.policy})
			if got, why := d.fitter.Fits(tc.pod, n, constraints.AppendRequestedResources(nil, tc.pod)); got != tc.want || why != tc.wantWhy {
				t.Errorf("Fits = %v %q, want %v %q", got, why, tc.want, tc.wantWhy)
			}
			if got := d.PreEvictionFilter(tc.pod); got != tc.want {
				t.Errorf("PreEvictionFilter = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMissingCRPolicyArg(t *testing.T) {
	cases := []struct {
		policy  config.MissingCRPolicy
		wantErr string
	}{
		{"", ""},
		{config.MissingCRPolicyReject, ""},
		{config.MissingCRPolicyIgnore, ""},
		{"reject", `args.missingCRPolicy: Unsupported value: "reject": supported values: "Reject", "Ignore"`},
		{"Allow", `args.missingCRPolicy: Unsupported value: "Allow"`},
	}
	for _, tc := range cases {
		t.Run(string(tc.policy), func(t *testing.T) {
			a := &DefaultEvictorArgs{MissingCRPolicy: tc.policy}
			errs := a.Validate(field.NewPath("args"))
			switch {
			case tc.wantErr == "" && len(errs) > 0:
				t.Errorf("Validate: %v", errs)
			case tc.wantErr != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.wantErr)):
				t.Errorf("Validate = %v, want one error containing %q", errs, tc.wantErr)
			}
			if tc.wantErr != "" {
				return
			}
			a.SetDefaults()
			want := tc.policy
			if want == "" {
				want = config.MissingCRPolicyReject
			}
			if a.MissingCRPolicy != want {
				t.Errorf("defaulted to %q, want %q", a.MissingCRPolicy, want)
			}
		})
	}
}
