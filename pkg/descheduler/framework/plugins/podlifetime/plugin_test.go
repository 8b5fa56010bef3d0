package podlifetime

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/accord-sched/accord/pkg/descheduler/evictions"
	"github.com/accord-sched/accord/pkg/descheduler/framework/frameworktest"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/defaultevictor"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/plugintest"
)

var now = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func TestArgs(t *testing.T) {
	cases := []struct {
		name string
		args PodLifeTimeArgs
		errs []string
	}{
		{name: "max required", errs: []string{"a.maxPodLifeTimeSeconds"}},
		{name: "zero is a value", args: PodLifeTimeArgs{MaxPodLifeTimeSeconds: ptr.To[uint](0)}},
		{name: "bad state", args: PodLifeTimeArgs{MaxPodLifeTimeSeconds: ptr.To[uint](1), States: []string{"Sleeping"}}, errs: []string{"a.states[0]"}},
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

func aged(name, node string, age time.Duration, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := frameworktest.Pod("ns", name, node, 100)
	p.CreationTimestamp = metav1.NewTime(now.Add(-age))
	for _, m := range mutate {
		m(p)
	}
	return p
}

func TestDeschedule(t *testing.T) {
	pending := func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "i", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}}
	}
	objs := []runtime.Object{
		frameworktest.Node("n1", nil, 8, 16), frameworktest.Node("n2", nil, 8, 16),
		aged("young", "n1", time.Minute), aged("old", "n1", 2*time.Hour), aged("older", "n2", 3*time.Hour),
		aged("oldest-pending", "n2", 5*time.Hour, pending),
	}
	cases := []struct {
		name    string
		args    PodLifeTimeArgs
		evictor *defaultevictor.DefaultEvictorArgs
		limit   int
		want    []string
	}{
		{name: "older than an hour", args: PodLifeTimeArgs{MaxPodLifeTimeSeconds: ptr.To[uint](3600)}, want: []string{"ns/old", "ns/older", "ns/oldest-pending"}},
		{name: "oldest first under a total limit", args: PodLifeTimeArgs{MaxPodLifeTimeSeconds: ptr.To[uint](3600)}, limit: 2, want: []string{"ns/older", "ns/oldest-pending"}},
		{name: "states Running", args: PodLifeTimeArgs{MaxPodLifeTimeSeconds: ptr.To[uint](3600), States: []string{"Running"}}, want: []string{"ns/old", "ns/older"}},
		{name: "init container reason needs includingInitContainers", args: PodLifeTimeArgs{MaxPodLifeTimeSeconds: ptr.To[uint](3600), States: []string{"ImagePullBackOff"}}},
		{name: "init container reason", args: PodLifeTimeArgs{MaxPodLifeTimeSeconds: ptr.To[uint](3600), States: []string{"ImagePullBackOff"}, IncludingInitContainers: true}, want: []string{"ns/oldest-pending"}},
		{name: "DefaultEvictor labelSelector keeps unlabelled pods", args: PodLifeTimeArgs{MaxPodLifeTimeSeconds: ptr.To[uint](3600)},
			evictor: &defaultevictor.DefaultEvictorArgs{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := plugintest.Options{DefaultEvictor: tc.evictor}
			if tc.limit > 0 {
				opts.Limits = evictions.Limits{Total: &tc.limit}
			}
			env := plugintest.New(t, opts, objs...)
			pl, err := New(&tc.args, env.Handle())
			if err != nil {
				t.Fatal(err)
			}
			p := pl.(*Plugin)
			p.clock = testingclock.NewFakePassiveClock(now)
			env.Start(t)
			if got := env.Deschedule(t, p); !slices.Equal(got, tc.want) {
				t.Fatalf("evicted %v, want %v", got, tc.want)
			}
		})
	}
}
