package constraints

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
)

func benchPod() *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{container(rl("cpu", "100m"))},
		Containers: []corev1.Container{
			container(rl("cpu", "500m", "memory", "1Gi", string(exMem), "100Mi")),
			container(rl("cpu", "100m", string(exSSD), "1")),
		},
		Overhead: rl("memory", "64Mi"),
	}}
}

// assertZeroAllocs fails the benchmark when fn allocates.
func assertZeroAllocs(b *testing.B, fn func()) {
	b.Helper()
	if n := testing.AllocsPerRun(100, fn); n != 0 {
		b.Fatalf("%v allocations per call, want 0", n)
	}
}

func BenchmarkAppendRequestedResources(b *testing.B) {
	pod := benchPod()
	buf := make([]corev1.ResourceName, 0, 8)
	assertZeroAllocs(b, func() { buf = AppendRequestedResources(buf[:0], pod) })
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendRequestedResources(buf[:0], pod)
	}
}

func BenchmarkMissingResourceAndNodeScore(b *testing.B) {
	c := csr(map[corev1.ResourceName]bool{"cpu": true, "memory": true, exMem: true, exSSD: true},
		map[corev1.ResourceName]schedv1alpha1.ResourceScore{exMem: 55, exSSD: 80})
	requested := AppendRequestedResources(nil, benchPod())
	var sink int64
	fn := func() {
		if _, missing := MissingResource(c, requested); !missing {
			sink += NodeScore(c, requested)
		}
	}
	assertZeroAllocs(b, fn)
	b.ReportAllocs()
	for b.Loop() {
		fn()
	}
	_ = sink
}

func BenchmarkCheckLoadAndLoadScore(b *testing.B) {
	alloc := rl("cpu", "4", "memory", "16Gi")
	m := metric(time.Second, rl("cpu", "2", "memory", "8Gi"))
	th := []ResourceThreshold{{Name: "cpu", Percent: 80}, {Name: "memory", Percent: 80}}
	w := []ResourceWeight{{Name: "cpu", Weight: 1}, {Name: "memory", Weight: 1}}
	pod := rl("cpu", "500m", "memory", "1Gi")
	var sink int64
	fn := func() {
		if !CheckLoad(m, alloc, th, now, time.Minute).Overloaded {
			sink += LoadScore(m, alloc, pod, w, now, time.Minute)
		}
	}
	assertZeroAllocs(b, fn)
	b.ReportAllocs()
	for b.Loop() {
		fn()
	}
	_ = sink
}
