package removepodsviolatinginterpodantiaffinity

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/defaultevictor"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/plugintest"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

func TestArgs(t *testing.T) {
	a := RemovePodsViolatingInterPodAntiAffinityArgs{Namespaces: &pluginutil.Namespaces{Include: []string{"a"}, Exclude: []string{"b"}},
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"bad key!": "x"}}}
	a.SetDefaults()
	var got []string
	for _, e := range a.Validate(field.NewPath("a")) {
		got = append(got, e.Field)
	}
	if !slices.Equal(got, []string{"a.namespaces", "a.labelSelector.matchLabels"}) {
		t.Fatalf("errors on %v", got)
	}
	if errs := (&RemovePodsViolatingInterPodAntiAffinityArgs{}).Validate(nil); len(errs) != 0 {
		t.Fatal(errs)
	}
}

func pod(name, node, app string, prio int32, avoid string, key string) *corev1.Pod {
	p := fake.Pod("ns", name, node, 100)
	p.Labels = map[string]string{"app": app}
	p.Spec.Priority = ptr.To(prio)
	if avoid != "" {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": avoid}}, TopologyKey: key}}}}
	}
	return p
}

func TestDeschedule(t *testing.T) {
	zone := func(name, z string) *corev1.Node {
		return fake.Node(name, map[string]string{"zone": z, corev1.LabelHostname: name}, 8, 16)
	}
	nodes := []runtime.Object{zone("a1", "a"), zone("a2", "a"), zone("b1", "b")}
	cases := []struct {
		name    string
		pods    []runtime.Object
		args    RemovePodsViolatingInterPodAntiAffinityArgs
		evictor *defaultevictor.DefaultEvictorArgs
		want    []string
	}{
		{name: "same host", pods: []runtime.Object{pod("db", "a1", "db", 10, "", ""), pod("web", "a1", "web", 0, "db", corev1.LabelHostname)}, want: []string{"ns/web"}},
		{name: "other host, host key", pods: []runtime.Object{pod("db", "a2", "db", 10, "", ""), pod("web", "a1", "web", 0, "db", corev1.LabelHostname)}},
		{name: "other host, same zone", pods: []runtime.Object{pod("db", "a2", "db", 10, "", ""), pod("web", "a1", "web", 0, "db", "zone")}, want: []string{"ns/web"}},
		{name: "other zone", pods: []runtime.Object{pod("db", "b1", "db", 10, "", ""), pod("web", "a1", "web", 0, "db", "zone")}},
		{name: "mutual: only the lower priority goes", pods: []runtime.Object{pod("x", "a1", "s", 5, "s", corev1.LabelHostname), pod("y", "a1", "s", 1, "s", corev1.LabelHostname)}, want: []string{"ns/y"}},
		{name: "labelSelector arg", args: RemovePodsViolatingInterPodAntiAffinityArgs{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}},
			pods: []runtime.Object{pod("db", "a1", "db", 10, "", ""), pod("web", "a1", "web", 0, "db", corev1.LabelHostname)}},
		{name: "DefaultEvictor priorityThreshold protects", evictor: &defaultevictor.DefaultEvictorArgs{PriorityThreshold: &defaultevictor.PriorityThreshold{Value: ptr.To[int32](0)}},
			pods: []runtime.Object{pod("db", "a1", "db", 10, "", ""), pod("web", "a1", "web", 0, "db", corev1.LabelHostname)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := plugintest.New(t, plugintest.Options{DefaultEvictor: tc.evictor}, append(slices.Clone(nodes), tc.pods...)...)
			pl, err := New(t.Context(), &tc.args, env.Handle())
			if err != nil {
				t.Fatal(err)
			}
			env.Start(t)
			if got := env.Deschedule(t, pl.(*Plugin)); !slices.Equal(got, tc.want) {
				t.Fatalf("evicted %v, want %v", got, tc.want)
			}
		})
	}
}
