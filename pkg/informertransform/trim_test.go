package informertransform

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/sets"
)

// diffPaths returns the JSON paths (lists' elements as [], maps' keys as [key]) at which a and b
// differ.
func diffPaths(a, b reflect.Value, path string, out sets.Set[string]) {
	if reflect.DeepEqual(a.Interface(), b.Interface()) {
		return
	}
	switch a.Type() {
	case timeType, quantityType, intstrType:
		out.Insert(path)
		return
	}
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			out.Insert(path)
			return
		}
		diffPaths(a.Elem(), b.Elem(), path, out)
	case reflect.Struct:
		t := a.Type()
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			p := path
			if name != "" {
				if p != "" {
					p += "."
				}
				p += name
			}
			diffPaths(a.Field(i), b.Field(i), p, out)
		}
	case reflect.Slice:
		if a.Len() != b.Len() {
			out.Insert(path)
			return
		}
		for i := range a.Len() {
			diffPaths(a.Index(i), b.Index(i), path+"[]", out)
		}
	case reflect.Map:
		keys := map[string]reflect.Value{}
		for _, k := range append(a.MapKeys(), b.MapKeys()...) {
			keys[fmt.Sprint(k.Interface())] = k
		}
		for name, k := range keys {
			va, vb := a.MapIndex(k), b.MapIndex(k)
			if !va.IsValid() || !vb.IsValid() || !reflect.DeepEqual(va.Interface(), vb.Interface()) {
				out.Insert(path + "[" + name + "]")
			}
		}
	default:
		out.Insert(path)
	}
}

// under reports whether path is p or a field or element within it.
func under(path, p string) bool {
	return path == p || strings.HasPrefix(path, p+".") || strings.HasPrefix(path, p+"[")
}

// uncovered returns the paths of got that are not within one of want's.
func uncovered(got, want sets.Set[string]) []string {
	var out []string
	for _, g := range sets.List(got) {
		if !slices.ContainsFunc(sets.List(want), func(w string) bool { return under(g, w) }) {
			out = append(out, g)
		}
	}
	return out
}

func trimmedPaths() sets.Set[string] {
	s := sets.New[string]()
	for _, f := range Trimmed {
		s.Insert(f.Path)
	}
	return s
}

// TestTrimmedFieldsAreTheAuditedOnes: over a pod with every field set, TrimPod changes exactly the
// fields Trimmed lists (each with why no reader needs it), no more (a field dropped without being
// audited) and no fewer (an entry that no longer describes what TrimPod does).
func TestTrimmedFieldsAreTheAuditedOnes(t *testing.T) {
	pod := &corev1.Pod{}
	FillAll(pod)
	pod.Annotations[LastAppliedAnnotation] = `{"kind":"Pod"}`
	trimmed := pod.DeepCopy()
	TrimPod(trimmed)
	got := sets.New[string]()
	diffPaths(reflect.ValueOf(pod).Elem(), reflect.ValueOf(trimmed).Elem(), "", got)
	want := trimmedPaths()
	if extra := uncovered(got, want); len(extra) > 0 {
		t.Errorf("TrimPod drops fields that Trimmed does not list (audit them first): %v", extra)
	}
	for _, w := range sets.List(want) {
		if !slices.ContainsFunc(sets.List(got), func(g string) bool { return under(g, w) }) {
			t.Errorf("Trimmed lists %s, which TrimPod keeps", w)
		}
	}
	for _, f := range Trimmed {
		if f.Why == "" {
			t.Errorf("Trimmed %s says not why it is unread", f.Path)
		}
	}
}

// TestFillTrimmedSetsOnlyTrimmedFields: the verdict tests' aid changes only the audited fields,
// and trimming undoes it.
func TestFillTrimmedSetsOnlyTrimmedFields(t *testing.T) {
	pod := sharedPod()
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "kube-api-access"})
	pod.Status.ContainerStatuses[0].State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
	filled := pod.DeepCopy()
	FillTrimmed(filled)
	got := sets.New[string]()
	diffPaths(reflect.ValueOf(pod).Elem(), reflect.ValueOf(filled).Elem(), "", got)
	if extra := uncovered(got, trimmedPaths()); len(extra) > 0 {
		t.Errorf("FillTrimmed set fields Trimmed does not list: %v", extra)
	}
	for _, p := range []string{"spec.containers[].env", "spec.volumes[].projected", "status.containerStatuses[].state.waiting.message",
		"metadata.annotations[" + LastAppliedAnnotation + "]", "status.conditions[].message"} {
		if !slices.ContainsFunc(sets.List(got), func(g string) bool { return under(g, p) }) {
			t.Errorf("FillTrimmed left %s unset (have %v)", p, sets.List(got))
		}
	}
	want := pod.DeepCopy()
	TrimPod(want)
	TrimPod(filled)
	if !equality.Semantic.DeepEqual(filled, want) {
		t.Errorf("trimming a filled pod differs from trimming the pod:\n%s", diff.Diff(want, filled))
	}
}

// TestTrimmingPodSharerSharesTemplates: replicas that differ only in trimmed fields share their
// container lists, affinity and spread constraints; a replica with other requests does not; each
// pod equals its own trimmed copy.
func TestTrimmingPodSharerSharesTemplates(t *testing.T) {
	s := NewTrimmingPodSharer()
	var got []*corev1.Pod
	for i := range 3 {
		pod := sharedPod()
		pod.Name = fmt.Sprintf("p%d", i)
		pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "POD", Value: pod.Name}}
		pod.Status.ContainerStatuses[0].ContainerID = "containerd://" + pod.Name
		pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(time.Unix(int64(1700000000+i), 0))}}
		if i == 2 {
			pod.Spec.Containers[1].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("60m")
			pod.Status.ContainerStatuses[0].RestartCount = 1
		}
		want := pod.DeepCopy()
		want.ManagedFields = nil
		TrimPod(want)
		out, err := s.Transform(pod)
		if err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(out, want) {
			t.Errorf("pod %d is not its trimmed self:\n%s", i, diff.Diff(want, out))
		}
		got = append(got, out.(*corev1.Pod))
	}
	a, b, c := got[0].Spec, got[1].Spec, got[2].Spec
	if !same(a.Containers, b.Containers) || !same(a.InitContainers, b.InitContainers) || a.Affinity != b.Affinity ||
		!same(a.TopologySpreadConstraints, b.TopologySpreadConstraints) {
		t.Error("replicas of one template do not share their containers, affinity and spread constraints")
	}
	if same(a.Containers, c.Containers) {
		t.Error("pods with different requests share their containers")
	}
	if !same(a.InitContainers, c.InitContainers) || a.Affinity != c.Affinity {
		t.Error("equal init containers and affinities are not shared")
	}
	as, bs, cs := got[0].Status, got[1].Status, got[2].Status
	if !same(as.ContainerStatuses, bs.ContainerStatuses) || !same(as.InitContainerStatuses, cs.InitContainerStatuses) {
		t.Error("running replicas of one template, started at different times, do not share their container statuses")
	}
	if same(as.ContainerStatuses, cs.ContainerStatuses) {
		t.Error("a restarted replica shares the container statuses of one that did not restart")
	}
	if as.ContainerStatuses[0].State.Running == nil || cap(as.ContainerStatuses) != len(as.ContainerStatuses) {
		t.Error("a shared container status lost its running state, or its list is not clipped")
	}
	if cap(a.Containers) != len(a.Containers) {
		t.Error("a shared container list is not clipped")
	}
	// The untrimming sharer (kube-scheduler's pod informer) trims nothing.
	pod := sharedPod()
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "b"}}
	out, _ := NewPodSharer().Transform(pod)
	if len(out.(*corev1.Pod).Spec.Containers[0].Env) != 1 {
		t.Error("NewPodSharer trimmed a pod")
	}
}

// TestTrimmedPathsAreUnique: the audit lists each path once.
func TestTrimmedPathsAreUnique(t *testing.T) {
	paths := make([]string, 0, len(Trimmed))
	for _, f := range Trimmed {
		paths = append(paths, f.Path)
	}
	sort.Strings(paths)
	if c := slices.Compact(slices.Clone(paths)); len(c) != len(paths) {
		t.Errorf("Trimmed lists a path twice: %v", paths)
	}
}
