package defaultevictor

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	fwruntime "github.com/accord-sched/accord/pkg/descheduler/framework/runtime"
)

func newEvictor(t *testing.T, c *fake.Cluster, args *DefaultEvictorArgs) *DefaultEvictor {
	t.Helper()
	args.SetDefaults()
	if errs := args.Validate(nil); len(errs) > 0 {
		t.Fatal(errs)
	}
	indexer, err := fwruntime.AddPodNodeIndex(c.Factory)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := New(t.Context(), args, &fake.Handle{Cluster: c, Pods: indexer})
	if err != nil {
		t.Fatal(err)
	}
	c.Start(t)
	d := pl.(*DefaultEvictor)
	d.now = func() time.Time { return time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC) }
	return d
}

func pod(name string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := fake.Pod("ns", name, "n1", 500)
	p.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 11, 0, 0, 0, time.UTC))
	p.Labels = map[string]string{"app": "web"}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func TestFilterRules(t *testing.T) {
	c := fake.NewCluster(&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000})
	def := newEvictor(t, c, &DefaultEvictorArgs{})
	cases := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"plain ReplicaSet pod", pod("a"), true},
		{"mirror pod", pod("m", func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} }), false},
		{"static pod", pod("s", func(p *corev1.Pod) { p.Annotations = map[string]string{"kubernetes.io/config.source": "file"} }), false},
		{"terminating pod", pod("t", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Now()} }), false},
		{"DaemonSet pod", pod("d", func(p *corev1.Pod) { p.OwnerReferences[0].Kind = "DaemonSet" }), false},
		{"critical by value", pod("cv", func(p *corev1.Pod) { p.Spec.Priority = ptr.To[int32](2000000000) }), false},
		{"critical by class", pod("cc", func(p *corev1.Pod) { p.Spec.PriorityClassName = "system-node-critical" }), false},
		{"high but not critical", pod("hi", func(p *corev1.Pod) { p.Spec.Priority = ptr.To[int32](1000000) }), true},
		{"bare pod", pod("b", func(p *corev1.Pod) { p.OwnerReferences = nil }), false},
		{"failed bare pod", pod("fb", func(p *corev1.Pod) { p.OwnerReferences = nil; p.Status.Phase = corev1.PodFailed }), false},
		{"local storage", pod("ls", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}), false},
		{"PVC", pod("pvc", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}}
		}), false},
		{"evict annotation overrides protections", pod("ea", func(p *corev1.Pod) {
			p.OwnerReferences = nil
			p.Annotations = map[string]string{EvictAnnotation: ""}
		}), true},
		{"prefer-no-eviction is only a preference by default", pod("pne", func(p *corev1.Pod) { p.Annotations = map[string]string{PreferNoEvictionAnnotation: ""} }), true},
	}
	for _, tc := range cases {
		if got := def.Filter(tc.pod); got != tc.want {
			t.Errorf("%s: Filter = %v, want %v", tc.name, got, tc.want)
		}
	}

	allowing := newEvictor(t, fake.NewCluster(&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}), &DefaultEvictorArgs{
		PriorityThreshold: &PriorityThreshold{Name: "high"},
		PodProtections: PodProtections{DefaultDisabled: []PodProtection{PodsWithLocalStorage, DaemonSetPods, FailedBarePods,
			BarePods, PodsWithPVC, SystemCriticalPods}},
		LabelSelector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		MinPodAge:        &metav1.Duration{Duration: 30 * time.Minute},
		NoEvictionPolicy: MandatoryNoEvictionPolicy,
	})
	for i, tc := range cases[4:13] {
		if !allowing.Filter(tc.pod) {
			t.Errorf("%d %s: protection not disabled by args", i, tc.name)
		}
	}
	if allowing.Filter(pod("young", func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(allowing.now().Add(-time.Minute)) })) {
		t.Error("pod younger than minPodAge evictable")
	}
	if allowing.Filter(pod("other", func(p *corev1.Pod) { p.Labels = nil })) {
		t.Error("pod outside labelSelector evictable")
	}
	if allowing.Filter(pod("pne", func(p *corev1.Pod) { p.Annotations = map[string]string{PreferNoEvictionAnnotation: ""} })) {
		t.Error("prefer-no-eviction ignored with the Mandatory policy")
	}
	if allowing.threshold != 1000 {
		t.Errorf("threshold from class name = %d", allowing.threshold)
	}
	protectCritical := newEvictor(t, fake.NewCluster(&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}),
		&DefaultEvictorArgs{PriorityThreshold: &PriorityThreshold{Name: "high"}})
	if protectCritical.Filter(pod("p1000", func(p *corev1.Pod) { p.Spec.Priority = ptr.To[int32](1000) })) {
		t.Error("pod at the class threshold evictable")
	}
}

func TestPodsWithoutPDBAndMinReplicas(t *testing.T) {
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pdb"}, Spec: policyv1.PodDisruptionBudgetSpec{
		MaxUnavailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	only := pod("only")
	c := fake.NewCluster(pdb, only)
	d := newEvictor(t, c, &DefaultEvictorArgs{IgnorePodsWithoutPDB: true, MinReplicas: 2})
	if !d.Filter(pod("covered")) || d.Filter(pod("uncovered", func(p *corev1.Pod) { p.Labels = map[string]string{"app": "db"} })) {
		t.Error("PodsWithoutPDB protection")
	}
	if d.PreEvictionFilter(only) {
		t.Error("the only pod of its owner passed minReplicas 2")
	}
}

func TestNodeFit(t *testing.T) {
	gpu := corev1.ResourceName("example.com/gpu")
	node := func(name string, mutate ...func(*corev1.Node)) *corev1.Node {
		n := fake.Node(name, map[string]string{"zone": "z1"}, 2, 4)
		for _, m := range mutate {
			m(n)
		}
		return n
	}
	csr := func(name string, enabled ...corev1.ResourceName) runtime.Object {
		f := map[corev1.ResourceName]bool{}
		for _, r := range enabled {
			f[r] = true
		}
		return &schedv1alpha1.ClusterScopedResource{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: schedv1alpha1.ClusterScopedResourceSpec{ResourcesFilter: f}}
	}
	victim := pod("victim", func(p *corev1.Pod) {
		p.Spec.NodeName = "home"
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1500m")
	})
	cases := []struct {
		name  string
		node  *corev1.Node
		crs   []runtime.Object
		other []*corev1.Pod
		want  bool
	}{
		{"fits", node("x"), []runtime.Object{csr("x", "cpu")}, nil, true},
		{"no other node than its own", nil, nil, nil, false},
		{"not ready", node("x", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }), []runtime.Object{csr("x", "cpu")}, nil, false},
		{"untolerated taint", node("x", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "k", Value: "v", Effect: corev1.TaintEffectNoSchedule}}
		}), []runtime.Object{csr("x", "cpu")}, nil, false},
		{"unschedulable", node("x", func(n *corev1.Node) { n.Spec.Unschedulable = true }), []runtime.Object{csr("x", "cpu")}, nil, false},
		{"node affinity mismatch", node("x", func(n *corev1.Node) { n.Labels["zone"] = "z2" }), []runtime.Object{csr("x", "cpu")}, nil, false},
		{"insufficient cpu", node("x"), []runtime.Object{csr("x", "cpu")}, []*corev1.Pod{fake.Pod("ns", "big", "x", 1000)}, false},
		{"ClusterScopedResource lacks cpu", node("x"), []runtime.Object{csr("x", gpu)}, nil, false},
		{"no ClusterScopedResource", node("x"), nil, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := []runtime.Object{node("home"), victim}
			if tc.node != nil {
				objs = append(objs, tc.node)
			}
			for _, p := range tc.other {
				objs = append(objs, p)
			}
			c := fake.NewCluster(objs...)
			for _, cr := range tc.crs {
				if err := c.Accord.Tracker().Add(cr); err != nil {
					t.Fatal(err)
				}
			}
			v := victim.DeepCopy()
			v.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"z1"}}}}},
			}}}
			d := newEvictor(t, c, &DefaultEvictorArgs{NodeFit: true})
			if got := d.PreEvictionFilter(v); got != tc.want {
				t.Errorf("PreEvictionFilter = %v, want %v", got, tc.want)
			}
		})
	}
	// nodeSelector limits the candidate nodes.
	c := fake.NewCluster(node("home"), node("x"), victim)
	_ = c.Accord.Tracker().Add(csr("x", "cpu"))
	d := newEvictor(t, c, &DefaultEvictorArgs{NodeFit: true, NodeSelector: "zone=z9"})
	if d.PreEvictionFilter(victim) {
		t.Error("nodeSelector did not limit nodeFit's candidates")
	}
}

// The deprecated booleans still turn protections off, as upstream's do.
func TestDeprecatedBooleans(t *testing.T) {
	d := newEvictor(t, fake.NewCluster(), &DefaultEvictorArgs{EvictLocalStoragePods: true, EvictDaemonSetPods: true})
	local := pod("local", func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	})
	ds := pod("ds", func(p *corev1.Pod) { p.OwnerReferences[0].Kind = "DaemonSet" })
	if !d.Filter(local) || !d.Filter(ds) {
		t.Fatal("evictLocalStoragePods/evictDaemonSetPods did not turn the protections off")
	}
}

// namespaceLabelSelector: only pods of namespaces whose labels match are evictable.
func TestNamespaceLabelSelector(t *testing.T) {
	c := fake.NewCluster(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pay", Labels: map[string]string{"team": "payments"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"team": "web"}}})
	d := newEvictor(t, c, &DefaultEvictorArgs{NamespaceLabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "payments"}}})
	in := pod("in", func(p *corev1.Pod) { p.Namespace = "pay" })
	out := pod("out", func(p *corev1.Pod) { p.Namespace = "web" })
	gone := pod("gone", func(p *corev1.Pod) { p.Namespace = "missing" })
	if !d.Filter(in) {
		t.Error("pod of a matching namespace not evictable")
	}
	if ok, why := d.filter(out); ok || why != "namespace does not match namespaceLabelSelector" {
		t.Errorf("pod of another namespace: %v %q", ok, why)
	}
	if d.Filter(gone) {
		t.Error("pod of an unknown namespace evictable")
	}
	// An empty selector selects everything, as upstream.
	all := newEvictor(t, fake.NewCluster(), &DefaultEvictorArgs{NamespaceLabelSelector: &metav1.LabelSelector{}})
	if !all.Filter(out) {
		t.Error("an empty namespaceLabelSelector filtered a pod")
	}
}

// PodsWithResourceClaims (extra): pods with DRA claims are protected when it is enabled.
func TestPodsWithResourceClaims(t *testing.T) {
	claim := pod("claim", func(p *corev1.Pod) {
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("gpu-claim")}}
	})
	if !newEvictor(t, fake.NewCluster(), &DefaultEvictorArgs{}).Filter(claim) {
		t.Error("a pod with a ResourceClaim protected by default")
	}
	d := newEvictor(t, fake.NewCluster(), &DefaultEvictorArgs{PodProtections: PodProtections{ExtraEnabled: []PodProtection{PodsWithResourceClaims}}})
	if ok, why := d.filter(claim); ok || why != "pod with ResourceClaims" {
		t.Errorf("PodsWithResourceClaims: %v %q", ok, why)
	}
}

// podProtections.config.PodsWithPVC.protectedStorageClasses: only pods with a claim of a listed
// class are protected; a claim without a class, or that cannot be read, protects its pod.
func TestProtectedStorageClasses(t *testing.T) {
	pvc := func(name string, class *string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: class}}
	}
	c := fake.NewCluster(pvc("local", ptr.To("local-path")), pvc("net", ptr.To("ceph")), pvc("none", nil))
	d := newEvictor(t, c, &DefaultEvictorArgs{PodProtections: PodProtections{Config: &PodProtectionsConfig{
		PodsWithPVC: &PodsWithPVCConfig{ProtectedStorageClasses: []ProtectedStorageClass{{Name: "local-path"}}}}}})
	withClaim := func(claim string) *corev1.Pod {
		return pod(claim, func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
		})
	}
	for claim, want := range map[string]bool{"local": false, "net": true, "none": false, "absent": false} {
		if got := d.Filter(withClaim(claim)); got != want {
			_, why := d.filter(withClaim(claim))
			t.Errorf("pod with claim %q: evictable = %v, want %v (%s)", claim, got, want, why)
		}
	}
}

// Upstream's rules: the deprecated booleans do not mix with the lists; PodsWithPVC settings need
// the protection on; storage class names are required and unique.
func TestProtectionValidation(t *testing.T) {
	a := &DefaultEvictorArgs{EvictLocalStoragePods: true, PodProtections: PodProtections{
		DefaultDisabled: []PodProtection{PodsWithPVC, PodsWithPVC},
		Config:          &PodProtectionsConfig{PodsWithPVC: &PodsWithPVCConfig{ProtectedStorageClasses: []ProtectedStorageClass{{Name: ""}, {Name: "a"}, {Name: "a"}}}},
	}, NamespaceLabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Bogus"}}}}
	var got []string
	for _, e := range a.Validate(nil) {
		got = append(got, string(e.Type)+" "+e.Field)
	}
	for _, want := range []string{
		"FieldValueForbidden evictLocalStoragePods",
		"FieldValueDuplicate podProtections.defaultDisabled[1]",
		"FieldValueInvalid podProtections.config.PodsWithPVC",
		"FieldValueRequired podProtections.config.PodsWithPVC.protectedStorageClasses[0].name",
		"FieldValueDuplicate podProtections.config.PodsWithPVC.protectedStorageClasses[2].name",
		"FieldValueInvalid namespaceLabelSelector.matchExpressions[0].operator",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("missing %q in %q", want, got)
		}
	}
}
