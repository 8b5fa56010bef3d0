package constraints

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
)

const exMem corev1.ResourceName = "example.com/memory"
const exSSD corev1.ResourceName = "example.com/ssd"

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func container(requests corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: requests}}
}

func TestAppendRequestedResources(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	tests := []struct {
		name string
		pod  *corev1.Pod
		want []corev1.ResourceName
	}{
		{name: "nil pod", pod: nil, want: nil},
		{name: "no requests", pod: &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{container(nil)}}}, want: nil},
		{
			name: "containers are merged, deduplicated and sorted",
			pod: &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
				container(rl("memory", "1Gi", string(exMem), "100Mi")),
				container(rl("cpu", "100m", string(exMem), "1")),
			}}},
			want: []corev1.ResourceName{"cpu", exMem, "memory"},
		},
		{
			name: "zero requests are not requests",
			pod: &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
				container(rl("cpu", "0", string(exMem), "1")),
			}}},
			want: []corev1.ResourceName{exMem},
		},
		{
			name: "init containers count (the effective request is their max)",
			pod: &corev1.Pod{Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{container(rl(string(exSSD), "1"))},
				Containers:     []corev1.Container{container(rl("cpu", "1"))},
			}},
			want: []corev1.ResourceName{"cpu", exSSD},
		},
		{
			name: "sidecar init containers count",
			pod: &corev1.Pod{Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "side", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: rl(string(exMem), "5")}}},
				Containers:     []corev1.Container{container(nil)},
			}},
			want: []corev1.ResourceName{exMem},
		},
		{
			name: "pod overhead counts",
			pod: &corev1.Pod{Spec: corev1.PodSpec{
				Containers: []corev1.Container{container(rl(string(exMem), "1"))},
				Overhead:   rl("cpu", "250m", "memory", "120Mi"),
			}},
			want: []corev1.ResourceName{"cpu", exMem, "memory"},
		},
		{
			name: "pod-level requests count",
			pod: &corev1.Pod{Spec: corev1.PodSpec{
				Resources:  &corev1.ResourceRequirements{Requests: rl("memory", "1Gi")},
				Containers: []corev1.Container{container(nil)},
			}},
			want: []corev1.ResourceName{"memory"},
		},
		{
			name: "limits alone are not read (the API server defaults requests from them)",
			pod: &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "c", Resources: corev1.ResourceRequirements{Limits: rl("cpu", "1")}},
			}}},
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AppendRequestedResources(nil, tt.pod)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAppendRequestedResourcesKeepsPrefix(t *testing.T) {
	dst := []corev1.ResourceName{"zzz", "cpu"}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{container(rl("memory", "1", "cpu", "1"))}}}
	got := AppendRequestedResources(dst, pod)
	want := []corev1.ResourceName{"zzz", "cpu", "cpu", "memory"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func csr(filter map[corev1.ResourceName]bool, score map[corev1.ResourceName]schedv1alpha1.ResourceScore) *schedv1alpha1.ClusterScopedResource {
	return &schedv1alpha1.ClusterScopedResource{
		ObjectMeta: metav1.ObjectMeta{Name: "n"},
		Spec:       schedv1alpha1.ClusterScopedResourceSpec{ResourcesFilter: filter, ResourcesScore: score},
	}
}

func TestMissingResource(t *testing.T) {
	tests := []struct {
		name        string
		csr         *schedv1alpha1.ClusterScopedResource
		requested   []corev1.ResourceName
		wantMissing corev1.ResourceName
	}{
		{name: "all enabled", csr: csr(map[corev1.ResourceName]bool{exMem: true, exSSD: true}, nil), requested: []corev1.ResourceName{exMem, exSSD}},
		{name: "nothing requested", csr: csr(nil, nil), requested: nil},
		{name: "nothing requested, no CR", csr: nil, requested: nil},
		{name: "absent", csr: csr(map[corev1.ResourceName]bool{exMem: true}, nil), requested: []corev1.ResourceName{exMem, exSSD}, wantMissing: exSSD},
		{name: "disabled", csr: csr(map[corev1.ResourceName]bool{exMem: false, exSSD: true}, nil), requested: []corev1.ResourceName{exMem, exSSD}, wantMissing: exMem},
		{name: "no CR enables nothing", csr: nil, requested: []corev1.ResourceName{"cpu", exMem}, wantMissing: "cpu"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, missing := MissingResource(tt.csr, tt.requested)
			if got != tt.wantMissing || missing != (tt.wantMissing != "") {
				t.Fatalf("MissingResource = %q, %v; want %q", got, missing, tt.wantMissing)
			}
			if EnablesAll(tt.csr, tt.requested) != (tt.wantMissing == "") {
				t.Fatalf("EnablesAll disagrees with MissingResource")
			}
		})
	}
}

func TestNodeScore(t *testing.T) {
	scores := map[corev1.ResourceName]schedv1alpha1.ResourceScore{exMem: 55, exSSD: 80, "neg": -20, "big": 250}
	c := csr(nil, scores)
	tests := []struct {
		name      string
		csr       *schedv1alpha1.ClusterScopedResource
		requested []corev1.ResourceName
		want      int64
	}{
		{name: "single resource", csr: c, requested: []corev1.ResourceName{exMem}, want: 55},
		{name: "mean rounds up", csr: c, requested: []corev1.ResourceName{exMem, exSSD}, want: 68},
		{name: "absent counts zero", csr: c, requested: []corev1.ResourceName{exSSD, "absent"}, want: 40},
		{name: "negative counts zero", csr: c, requested: []corev1.ResourceName{"neg", exSSD}, want: 40},
		{name: "above 100 counts 100", csr: c, requested: []corev1.ResourceName{"big"}, want: 100},
		{name: "nothing requested", csr: c, requested: nil, want: 0},
		{name: "no CR", csr: nil, requested: []corev1.ResourceName{exMem}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NodeScore(tt.csr, tt.requested); got != tt.want {
				t.Fatalf("NodeScore = %d, want %d", got, tt.want)
			}
		})
	}
}
