package evictions

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDropForeignMarks(t *testing.T) {
	owns := func(manager, subresource, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: subresource,
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
	}
	soft := `{"f:metadata":{"f:annotations":{".":{},"f:descheduler.accord.dev/soft-eviction":{}}}}`
	for _, tc := range []struct {
		name    string
		managed []metav1.ManagedFieldsEntry
		dropped []string
	}{
		{"written by the descheduler", []metav1.ManagedFieldsEntry{owns("kube-controller-manager", "", `{"f:spec":{}}`), owns(FieldManager, "", soft)}, nil},
		{"written by a tenant", []metav1.ManagedFieldsEntry{owns("kubectl-annotate", "", soft)}, []string{SoftEvictionAnnotation, "descheduler.accord.dev/other"}},
		{"no managedFields", nil, []string{SoftEvictionAnnotation, "descheduler.accord.dev/other"}},
		{"the descheduler's entry of a subresource", []metav1.ManagedFieldsEntry{owns(FieldManager, "status", soft)}, []string{SoftEvictionAnnotation, "descheduler.accord.dev/other"}},
		{"malformed fields", []metav1.ManagedFieldsEntry{owns(FieldManager, "", `{"f:metadata":`)}, []string{SoftEvictionAnnotation, "descheduler.accord.dev/other"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "tenant", ManagedFields: tc.managed, Annotations: map[string]string{
				SoftEvictionAnnotation: `{"time":"2026-01-01T00:00:00Z","profile":"p"}`, "descheduler.accord.dev/other": "x", "example.com/kept": "y"}}}
			want := slices.Clone(tc.dropped)
			if want == nil {
				// Only the key the descheduler's entry names is kept.
				want = []string{"descheduler.accord.dev/other"}
			}
			got := DropForeignMarks(p)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("dropped %v, want %v", got, want)
			}
			for _, k := range want {
				if _, ok := p.Annotations[k]; ok {
					t.Errorf("annotation %s still on the pod", k)
				}
			}
			if p.Annotations["example.com/kept"] != "y" {
				t.Error("an annotation outside descheduler.accord.dev/ was touched")
			}
			if _, ok := p.Annotations[SoftEvictionAnnotation]; ok != (tc.dropped == nil) {
				t.Errorf("soft-eviction annotation kept = %v", ok)
			}
		})
	}
}

// TestVerifyMarksTwice: the informer may transform a cached pod again; its own marks, checked the
// first time, stay (its managedFields are gone by then), while a pod arriving without managedFields
// (a client stripped them) loses its marks.
func TestVerifyMarksTwice(t *testing.T) {
	strip := func(obj any) (any, error) {
		obj.(*corev1.Pod).ManagedFields = nil
		return obj, nil
	}
	transform := VerifyMarks(strip)
	own := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "own", Annotations: map[string]string{SoftEvictionAnnotation: "{}"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: FieldManager, FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{"f:descheduler.accord.dev/soft-eviction":{}}}}`)}}}}}
	for i := range 3 {
		if _, err := transform(own); err != nil {
			t.Fatal(err)
		}
		if _, ok := own.Annotations[SoftEvictionAnnotation]; !ok {
			t.Fatalf("pass %d dropped the descheduler's own mark", i+1)
		}
	}
	stripped := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "stripped", Annotations: map[string]string{SoftEvictionAnnotation: "{}"}}}
	if _, err := transform(stripped); err != nil {
		t.Fatal(err)
	}
	if _, ok := stripped.Annotations[SoftEvictionAnnotation]; ok {
		t.Error("a pod without managedFields kept its mark")
	}
	// A copy of a verified pod (DeepCopy: a new array) is checked again.
	cp := own.DeepCopy()
	if _, err := transform(cp); err != nil {
		t.Fatal(err)
	}
	if _, ok := cp.Annotations[SoftEvictionAnnotation]; ok {
		t.Error("a copy of a verified pod was taken as verified")
	}
}
