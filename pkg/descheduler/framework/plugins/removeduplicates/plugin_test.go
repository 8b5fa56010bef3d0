package removeduplicates

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/defaultevictor"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/plugintest"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

func TestArgs(t *testing.T) {
	cases := []struct {
		name string
		args RemoveDuplicatesArgs
		errs []string
	}{
		{name: "empty is valid"},
		{name: "empty kind", args: RemoveDuplicatesArgs{ExcludeOwnerKinds: []string{"Job", ""}}, errs: []string{"a.excludeOwnerKinds[1]"}},
		{name: "namespaces", args: RemoveDuplicatesArgs{Namespaces: &pluginutil.Namespaces{Include: []string{"x"}, Exclude: []string{"y"}}}, errs: []string{"a.namespaces"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.args.SetDefaults()
			var got []string
			for _, e := range tc.args.Validate(field.NewPath("a")) {
				got = append(got, e.Field)
			}
			if !slices.Equal(got, tc.errs) {
				t.Fatalf("errors on %v, want %v", got, tc.errs)
			}
		})
	}
}

func owned(name, node, kind, owner, image string) *corev1.Pod {
	p := fake.Pod("ns", name, node, 100)
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: owner, UID: "uid-" + "owner"}}
	p.Spec.Containers[0].Image = image
	return p
}

func TestBalance(t *testing.T) {
	base := func(extra ...runtime.Object) []runtime.Object {
		objs := []runtime.Object{fake.Node("n1", nil, 8, 16), fake.Node("n2", nil, 8, 16), fake.Node("n3", nil, 8, 16)}
		// Four pods of rs "web" on n1, one on n2: 5 pods over 3 nodes, so at most 2 per node.
		for i := range 4 {
			objs = append(objs, owned(fmt.Sprintf("web-%d", i), "n1", "ReplicaSet", "web", "nginx"))
		}
		objs = append(objs, owned("web-4", "n2", "ReplicaSet", "web", "nginx"))
		// Same owner, other image: not a duplicate of web.
		objs = append(objs, owned("web-debug", "n1", "ReplicaSet", "web", "busybox"))
		// Two Job pods on n3.
		objs = append(objs, owned("job-0", "n3", "Job", "batch", "x"), owned("job-1", "n3", "Job", "batch", "x"))
		return append(objs, extra...)
	}
	// With n2 and n3 tainted, web could only run on n1: nothing to spread to.
	onlyN1 := base()
	for i, name := range []string{"n2", "n3"} {
		n := fake.Node(name, nil, 8, 16)
		n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
		onlyN1[i+1] = n
	}
	cases := []struct {
		name    string
		args    RemoveDuplicatesArgs
		objs    []runtime.Object
		evictor *defaultevictor.DefaultEvictorArgs
		count   map[string]int // evictions expected per owner prefix
	}{
		{name: "spreads to the even share", objs: base(), count: map[string]int{"web-": 2, "job-": 1}},
		{name: "excludeOwnerKinds", args: RemoveDuplicatesArgs{ExcludeOwnerKinds: []string{"ReplicaSet"}}, objs: base(), count: map[string]int{"web-": 0, "job-": 1}},
		{name: "excludeOwnerKinds Job", args: RemoveDuplicatesArgs{ExcludeOwnerKinds: []string{"Job"}}, objs: base(), count: map[string]int{"web-": 2, "job-": 0}},
		{name: "taints leave one feasible node", objs: onlyN1, count: map[string]int{"web-": 0, "job-": 0}},
		{name: "namespaces", args: RemoveDuplicatesArgs{Namespaces: &pluginutil.Namespaces{Exclude: []string{"ns"}}}, objs: base(), count: map[string]int{"web-": 0}},
		{name: "DefaultEvictor labelSelector hides the pods", objs: base(),
			evictor: &defaultevictor.DefaultEvictorArgs{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}}, count: map[string]int{"web-": 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := plugintest.New(t, plugintest.Options{DefaultEvictor: tc.evictor}, tc.objs...)
			pl, err := New(t.Context(), &tc.args, env.Handle())
			if err != nil {
				t.Fatal(err)
			}
			env.Start(t)
			got := env.Balance(t, pl.(*Plugin))
			for prefix, want := range tc.count {
				n := 0
				for _, g := range got {
					if len(g) > 3+len(prefix) && g[3:3+len(prefix)] == prefix {
						n++
					}
					if g == "ns/web-debug" || g == "ns/web-4" {
						t.Fatalf("evicted %s", g)
					}
				}
				if n != want {
					t.Fatalf("evicted %v: %d with prefix %q, want %d", got, n, prefix, want)
				}
			}
		})
	}
}
