package constraints

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
)

// TestOfferAgreesWithCR checks the compiled Offer against the functions on the CR itself, over
// every combination of a set of CRs and requested sets.
func TestOfferAgreesWithCR(t *testing.T) {
	crs := []*schedv1alpha1.ClusterScopedResource{
		nil,
		csr(nil, nil),
		csr(map[corev1.ResourceName]bool{exMem: true}, map[corev1.ResourceName]schedv1alpha1.ResourceScore{exMem: 55}),
		csr(map[corev1.ResourceName]bool{exMem: true, exSSD: true, "cpu": true}, map[corev1.ResourceName]schedv1alpha1.ResourceScore{exMem: 80, exSSD: 7, "cpu": -3}),
		csr(map[corev1.ResourceName]bool{exMem: false, exSSD: true, "zzz": true}, map[corev1.ResourceName]schedv1alpha1.ResourceScore{exSSD: 250, "aaa": 10}),
		csr(map[corev1.ResourceName]bool{"a": true, "b": true, "c": true}, map[corev1.ResourceName]schedv1alpha1.ResourceScore{"a": 1, "b": 2, "c": 3}),
	}
	requests := [][]corev1.ResourceName{
		nil,
		{exMem},
		{exSSD},
		{"cpu", exMem},
		{"cpu", exMem, exSSD},
		{exMem, exSSD, "zzz"},
		{"a", "c"},
		{"0", "a"},
		{"aaa", exSSD},
	}
	for i, c := range crs {
		o := NewOffer(c)
		for _, req := range requests {
			wantName, wantMissing := MissingResource(c, req)
			gotName, gotMissing := o.MissingResource(req)
			if gotName != wantName || gotMissing != wantMissing {
				t.Errorf("cr %d, requested %v: Offer.MissingResource = %q, %v; CR says %q, %v", i, req, gotName, gotMissing, wantName, wantMissing)
			}
			if got, want := o.NodeScore(req), NodeScore(c, req); got != want {
				t.Errorf("cr %d, requested %v: Offer.NodeScore = %d; CR says %d", i, req, got, want)
			}
		}
	}
}

func BenchmarkOffer(b *testing.B) {
	o := NewOffer(csr(map[corev1.ResourceName]bool{"cpu": true, "memory": true, exMem: true, exSSD: true},
		map[corev1.ResourceName]schedv1alpha1.ResourceScore{exMem: 55, exSSD: 80}))
	requested := AppendRequestedResources(nil, benchPod())
	var sink int64
	fn := func() {
		if _, missing := o.MissingResource(requested); !missing {
			sink += o.NodeScore(requested)
		}
	}
	assertZeroAllocs(b, fn)
	b.ReportAllocs()
	for b.Loop() {
		fn()
	}
	_ = sink
}
