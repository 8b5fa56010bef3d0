package constraints

import (
	"runtime"
	"strings"
	"testing"
	"unsafe"

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

// TestInternSharesOneCopy: interned names share one backing array however they were built, and the
// Offer keeps interned names, so a check of interned requested names compares pointers.
func TestInternSharesOneCopy(t *testing.T) {
	built := corev1.ResourceName(strings.Repeat("example.com/", 1) + "memory")
	a, b := Intern(built), Intern(corev1.ResourceName("example.com/memory"))
	if a != b || unsafe.StringData(string(a)) != unsafe.StringData(string(b)) {
		t.Fatalf("Intern gave two copies of %q", a)
	}
	names := InternAll([]corev1.ResourceName{corev1.ResourceName(strings.Clone("example.com/memory"))})
	if unsafe.StringData(string(names[0])) != unsafe.StringData(string(a)) {
		t.Fatal("InternAll did not replace the name with its interned copy")
	}
	o := NewOffer(&schedv1alpha1.ClusterScopedResource{Spec: schedv1alpha1.ClusterScopedResourceSpec{
		ResourcesFilter: map[corev1.ResourceName]bool{built: true},
		ResourcesScore:  map[corev1.ResourceName]schedv1alpha1.ResourceScore{built: 40},
	}})
	if unsafe.StringData(string(o.enabled[0])) != unsafe.StringData(string(a)) || unsafe.StringData(string(o.scores[0].name)) != unsafe.StringData(string(a)) {
		t.Fatal("NewOffer keeps names that are not interned")
	}
	if _, missing := o.MissingResource(names); missing || o.NodeScore(names) != 40 {
		t.Fatalf("interned names: missing %v, score %d", missing, o.NodeScore(names))
	}
}

// TestInternSurvivesGC: while an Offer lives, a name interned after garbage collections still gets
// the Offer's copy (the Offer holds the handle), so the check compares pointers.
func TestInternSurvivesGC(t *testing.T) {
	name := corev1.ResourceName(strings.Clone("example.com/intern-gc-test"))
	o := NewOffer(&schedv1alpha1.ClusterScopedResource{Spec: schedv1alpha1.ClusterScopedResourceSpec{
		ResourcesFilter: map[corev1.ResourceName]bool{name: true},
	}})
	for range 3 {
		runtime.GC()
	}
	later := Intern(corev1.ResourceName(strings.Clone(string(name))))
	if unsafe.StringData(string(later)) != unsafe.StringData(string(o.enabled[0])) {
		t.Fatal("after a GC, Intern gave a new copy of a name a live Offer holds")
	}
	runtime.KeepAlive(o)
}

// BenchmarkOfferNodes checks one pod's requested names against 5000 Offers, as Filter and Score do
// over a cluster's nodes: with the names interned (InternAll, pointer comparisons) and with
// separate copies of the same bytes (byte comparisons), the A/B that decides whether interning pays.
func BenchmarkOfferNodes(b *testing.B) {
	names := []corev1.ResourceName{"cpu", "memory", exMem, exSSD}
	offers := make([]*Offer, 5000)
	for i := range offers {
		filter := map[corev1.ResourceName]bool{}
		score := map[corev1.ResourceName]schedv1alpha1.ResourceScore{}
		for j, n := range names {
			n = corev1.ResourceName(strings.Clone(string(n)))
			filter[n] = true
			score[n] = schedv1alpha1.ResourceScore(10 + (i+j)%90)
		}
		offers[i] = NewOffer(csr(filter, score))
	}
	copies := func() []corev1.ResourceName {
		out := make([]corev1.ResourceName, 0, len(names))
		for _, n := range []corev1.ResourceName{"cpu", "memory", exMem} {
			out = append(out, corev1.ResourceName(strings.Clone(string(n))))
		}
		return out
	}
	for _, c := range []struct {
		name      string
		requested []corev1.ResourceName
	}{{"interned", InternAll(copies())}, {"copies", copies()}} {
		b.Run(c.name, func(b *testing.B) {
			var sink int64
			for b.Loop() {
				for _, o := range offers {
					if _, missing := o.MissingResource(c.requested); !missing {
						sink += o.NodeScore(c.requested)
					}
				}
			}
			_ = sink
		})
	}
}

// TestOfferKeepsShortListsInline: an Offer of up to four names reads its own memory only, and one
// of more keeps them all.
func TestOfferKeepsShortListsInline(t *testing.T) {
	names := []corev1.ResourceName{"cpu", "memory", exMem, exSSD, "example.com/gpu"}
	for _, n := range []int{2, 4, 5} {
		filter := map[corev1.ResourceName]bool{}
		score := map[corev1.ResourceName]schedv1alpha1.ResourceScore{}
		for _, name := range names[:n] {
			filter[name], score[name] = true, 50
		}
		o := NewOffer(csr(filter, score))
		if len(o.enabled) != n || len(o.scores) != n {
			t.Fatalf("%d names: the Offer enables %d and scores %d", n, len(o.enabled), len(o.scores))
		}
		inline := &o.enabled[0] == &o.enabledInline[0] && &o.scores[0] == &o.scoresInline[0]
		if inline != (n <= inlineNames) {
			t.Errorf("%d names: inline = %v, want %v", n, inline, n <= inlineNames)
		}
		if got := o.NodeScore(names[:n]); got != 50 {
			t.Errorf("%d names: NodeScore = %d, want 50", n, got)
		}
	}
}

// TestOfferCopyTo: a copy answers as the Offer does, and one whose lists fit inline reads its own
// memory only, never the original's.
func TestOfferCopyTo(t *testing.T) {
	names := []corev1.ResourceName{"cpu", "memory", exMem, exSSD, "example.com/gpu"}
	for _, n := range []int{0, 2, 4, 5} {
		filter := map[corev1.ResourceName]bool{}
		score := map[corev1.ResourceName]schedv1alpha1.ResourceScore{}
		for i, name := range names[:n] {
			filter[name], score[name] = true, schedv1alpha1.ResourceScore(10*i+5)
		}
		o := NewOffer(csr(filter, score))
		var c Offer
		o.CopyTo(&c)
		for _, req := range [][]corev1.ResourceName{nil, names[:1], names[:2], names[1:4], names} {
			if got, want := c.NodeScore(req), o.NodeScore(req); got != want {
				t.Errorf("%d names: the copy's NodeScore(%v) = %d, the Offer's %d", n, req, got, want)
			}
			gm, gok := c.MissingResource(req)
			wm, wok := o.MissingResource(req)
			if gm != wm || gok != wok {
				t.Errorf("%d names: the copy's MissingResource(%v) = %q, %v, the Offer's %q, %v", n, req, gm, gok, wm, wok)
			}
		}
		if n == 0 || n > inlineNames {
			continue
		}
		if &c.enabled[0] != &c.enabledInline[0] || &c.scores[0] != &c.scoresInline[0] {
			t.Errorf("%d names: the copy's lists do not point at its own inline storage", n)
		}
	}
}
