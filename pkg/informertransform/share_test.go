package informertransform

import (
	"bytes"
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
)

// sharedPod is fullPod with a second container, tolerations with and without seconds, and the
// fields that only PodSharer touches, so that every branch of share runs.
func sharedPod() *corev1.Pod {
	pod := fullPod()
	pod.GenerateName = "web-"
	pod.Spec.ServiceAccountName, pod.Spec.DeprecatedServiceAccount = "sa", "sa"
	pod.Spec.RestartPolicy, pod.Spec.DNSPolicy = corev1.RestartPolicyAlways, corev1.DNSClusterFirst
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{Key: corev1.TaintNodeNotReady,
		Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: new(int64(300))})
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "sidecar", Image: "img:1",
		ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePath: "/dev/termination-log",
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}}})
	pod.Status.HostIP = "10.0.0.1"
	pod.Status.HostIPs = []corev1.HostIP{{IP: "10.0.0.1"}}
	pod.Status.ContainerStatuses[0].Image, pod.Status.ContainerStatuses[0].ImageID = "img:1", "sha256:1"
	pod.Spec.Priority, pod.Spec.PreemptionPolicy = new(int32(0)), new(corev1.PreemptLowerPriority)
	pod.Spec.EnableServiceLinks, pod.Spec.TerminationGracePeriodSeconds = new(true), new(int64(30))
	return pod
}

func TestPodSharerKeepsEverything(t *testing.T) {
	var _ cache.TransformFunc = NewPodSharer().Transform
	s := NewPodSharer()
	for i := range 2 { // the second pod takes the shared copies
		pod := sharedPod()
		want := pod.DeepCopy()
		want.ManagedFields = nil
		got, err := s.Transform(pod)
		if err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("pod %d changed beyond managedFields:\n%s", i, diff.Diff(want, got))
		}
	}

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"a": "b"}, ManagedFields: fullPod().ManagedFields}}
	if got, _ := s.Transform(node); got.(*corev1.Node).ManagedFields != nil || got.(*corev1.Node).Labels["a"] != "b" {
		t.Errorf("a node is only stripped of its managedFields: %+v", got)
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: fullPod()}
	if got, err := s.Transform(tomb); err != nil || !equality.Semantic.DeepEqual(got, tomb) {
		t.Errorf("a tombstone must pass unchanged: got %v, %v", got, err)
	}
}

// same reports whether two maps, slices or strings are one copy.
func same[T any](a, b T) bool {
	switch v := any(a).(type) {
	case string:
		return unsafe.StringData(v) == unsafe.StringData(any(b).(string))
	default:
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}
}

func TestPodSharerSharesEqualParts(t *testing.T) {
	s := NewPodSharer()
	a, b := sharedPod(), sharedPod()
	b.Name = "q"
	for _, p := range []*corev1.Pod{a, b} {
		if _, err := s.Transform(p); err != nil {
			t.Fatal(err)
		}
	}
	for name, ok := range map[string]bool{
		"labels":            same(a.Labels, b.Labels),
		"annotations":       same(a.Annotations, b.Annotations),
		"ownerReferences":   same(a.OwnerReferences, b.OwnerReferences),
		"nodeSelector":      same(a.Spec.NodeSelector, b.Spec.NodeSelector),
		"tolerations":       same(a.Spec.Tolerations, b.Spec.Tolerations),
		"overhead":          same(a.Spec.Overhead, b.Spec.Overhead),
		"requests":          same(a.Spec.Containers[1].Resources.Requests, b.Spec.Containers[1].Resources.Requests),
		"limits":            same(a.Spec.Containers[1].Resources.Limits, b.Spec.Containers[1].Resources.Limits),
		"init requests":     same(a.Spec.InitContainers[0].Resources.Requests, b.Spec.InitContainers[0].Resources.Requests),
		"namespace":         same(a.Namespace, b.Namespace),
		"image":             same(a.Spec.Containers[1].Image, b.Spec.Containers[1].Image),
		"phase":             same(string(a.Status.Phase), string(b.Status.Phase)),
		"condition type":    same(string(a.Status.Conditions[0].Type), string(b.Status.Conditions[0].Type)),
		"status image id":   same(a.Status.ContainerStatuses[0].ImageID, b.Status.ContainerStatuses[0].ImageID),
		"host IP":           same(a.Status.HostIPs[0].IP, b.Status.HostIPs[0].IP),
		"host IPs":          same(a.Status.HostIPs, b.Status.HostIPs),
		"priority":          a.Spec.Priority == b.Spec.Priority,
		"preemption policy": a.Spec.PreemptionPolicy == b.Spec.PreemptionPolicy,
		"service links":     a.Spec.EnableServiceLinks == b.Spec.EnableServiceLinks,
		"grace period":      a.Spec.TerminationGracePeriodSeconds == b.Spec.TerminationGracePeriodSeconds,
		"scheduler name":    same(a.Spec.SchedulerName, b.Spec.SchedulerName),
		"termination path":  same(a.Spec.Containers[1].TerminationMessagePath, b.Spec.Containers[1].TerminationMessagePath),
		"pod name (unique)": !same(a.Name, b.Name),
	} {
		if !ok {
			t.Errorf("%s: want one copy for equal content", name)
		}
	}

	// A shared list is clipped: an append makes a new array and leaves the other pod's list alone.
	grown := append(a.Spec.Tolerations, corev1.Toleration{Key: "extra"})
	if len(b.Spec.Tolerations) != 2 || same(grown, b.Spec.Tolerations) {
		t.Errorf("appending to a shared toleration list changed it: %v", b.Spec.Tolerations)
	}
}

func TestPodSharerKeepsDifferentContentApart(t *testing.T) {
	s := NewPodSharer()
	a, b := sharedPod(), sharedPod()
	b.Labels = map[string]string{"app": "web2"}
	b.Spec.Containers[1].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("51m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
	b.Spec.Tolerations[1].TolerationSeconds = new(int64(30))
	b.OwnerReferences[0].Controller = new(false)
	b.Spec.Priority, b.Spec.EnableServiceLinks = new(int32(7)), new(false)
	b.Status.HostIPs = []corev1.HostIP{{IP: "10.0.0.2"}}
	// Keys are length-prefixed: {"ab": "c"} and {"a": "bc"} must not collide.
	a.Spec.NodeSelector, b.Spec.NodeSelector = map[string]string{"ab": "c"}, map[string]string{"a": "bc"}
	for _, p := range []*corev1.Pod{a, b} {
		if _, err := s.Transform(p); err != nil {
			t.Fatal(err)
		}
	}
	if b.Labels["app"] != "web2" || b.Spec.NodeSelector["a"] != "bc" || a.Spec.NodeSelector["ab"] != "c" ||
		b.Spec.Containers[1].Resources.Requests.Cpu().MilliValue() != 51 || *b.Spec.Tolerations[1].TolerationSeconds != 30 ||
		*b.OwnerReferences[0].Controller || *b.Spec.Priority != 7 || *b.Spec.EnableServiceLinks || *a.Spec.Priority != 0 ||
		b.Status.HostIPs[0].IP != "10.0.0.2" {
		t.Errorf("a pod took another pod's different content: %+v", b)
	}
}

func TestPodSharerTablesAreBounded(t *testing.T) {
	s := NewPodSharer()
	for i := range maxShared + 10 {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"i": fmt.Sprint(i)}}}
		if _, err := s.Transform(pod); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(s.maps.m); n > maxShared {
		t.Errorf("the label table holds %d entries, more than %d", n, maxShared)
	}
	big := map[string]string{"a": string(make([]byte, maxSharedKey))}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: big}}
	before := len(s.maps.m)
	if _, err := s.Transform(pod); err != nil || len(s.maps.m) != before || !same(pod.Annotations, big) {
		t.Errorf("an annotation map over %d bytes must stay the pod's own and not enter the table", maxSharedKey)
	}
}

// BenchmarkPodSharerHeap decodes 20000 replicas of one pod from protobuf, as an informer does, and
// reports the heap they keep per pod, with and without PodSharer (the transform's CPU is the ns/op).
func BenchmarkPodSharerHeap(b *testing.B) {
	codec := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	pod := sharedPod()
	pod.DeletionTimestamp = nil
	pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	var raw bytes.Buffer
	const n = 20000
	for _, shared := range []bool{false, true} {
		b.Run(fmt.Sprintf("shared=%v", shared), func(b *testing.B) {
			for b.Loop() {
				s := NewPodSharer()
				kept := make([]kruntime.Object, n)
				var m0, m1 runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&m0)
				for i := range kept {
					pod.Name = fmt.Sprintf("pod-%06d", i)
					raw.Reset()
					if err := codec.Encode(pod, &raw); err != nil {
						b.Fatal(err)
					}
					obj, _, err := codec.Decode(raw.Bytes(), nil, nil)
					if err != nil {
						b.Fatal(err)
					}
					if shared {
						_, _ = s.Transform(obj)
					} else {
						_, _ = StripManagedFields(obj)
					}
					kept[i] = obj
				}
				runtime.GC()
				runtime.ReadMemStats(&m1)
				b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/n, "heapB/pod")
				runtime.KeepAlive(kept)
			}
		})
	}
}
