package removefailedpods

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

	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/defaultevictor"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/plugintest"
)

var now = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func TestArgs(t *testing.T) {
	cases := []struct {
		name string
		args RemoveFailedPodsArgs
		errs []string
	}{
		{name: "empty is valid"},
		{name: "bad exit code", args: RemoveFailedPodsArgs{ExitCodes: []int32{1, 300}}, errs: []string{"a.exitCodes[1]"}},
		{name: "empty owner kind", args: RemoveFailedPodsArgs{ExcludeOwnerKinds: []string{""}}, errs: []string{"a.excludeOwnerKinds[0]"}},
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

func failed(name, reason string, exit int32, age time.Duration, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := fake.Pod("ns", name, "n1", 100)
	p.CreationTimestamp = metav1.NewTime(now.Add(-age))
	p.Status.Phase = corev1.PodFailed
	p.Status.Reason = reason
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Reason: "Error"}}}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func TestDeschedule(t *testing.T) {
	job := failed("job", "", 1, time.Hour, func(p *corev1.Pod) { p.OwnerReferences[0].Kind = "Job" })
	bare := failed("bare", "", 1, time.Hour, func(p *corev1.Pod) { p.OwnerReferences = nil })
	initFail := failed("init", "", 0, time.Hour, func(p *corev1.Pod) {
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "i", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 42, Reason: "InitCrash"}}}}
	})
	objs := []runtime.Object{
		fake.Node("n1", nil, 8, 16), fake.Pod("ns", "running", "n1", 100),
		failed("affinity", "NodeAffinity", 0, time.Hour), failed("exit-2", "", 2, time.Hour), failed("young", "", 1, time.Minute),
		job, bare, initFail,
	}
	cases := []struct {
		name    string
		args    RemoveFailedPodsArgs
		evictor *defaultevictor.DefaultEvictorArgs
		want    []string
	}{
		{name: "every failed pod with an owner", want: []string{"ns/affinity", "ns/exit-2", "ns/init", "ns/job", "ns/young"}},
		{name: "excludeOwnerKinds", args: RemoveFailedPodsArgs{ExcludeOwnerKinds: []string{"Job"}}, want: []string{"ns/affinity", "ns/exit-2", "ns/init", "ns/young"}},
		{name: "minPodLifetimeSeconds", args: RemoveFailedPodsArgs{MinPodLifetimeSeconds: ptr.To[uint](600)}, want: []string{"ns/affinity", "ns/exit-2", "ns/init", "ns/job"}},
		{name: "reasons", args: RemoveFailedPodsArgs{Reasons: []string{"NodeAffinity", "InitCrash"}}, want: []string{"ns/affinity"}},
		{name: "reasons with init containers", args: RemoveFailedPodsArgs{Reasons: []string{"InitCrash"}, IncludingInitContainers: true}, want: []string{"ns/init"}},
		{name: "exit codes", args: RemoveFailedPodsArgs{ExitCodes: []int32{2, 42}}, want: []string{"ns/exit-2"}},
		{name: "DefaultEvictor evictFailedBarePods", args: RemoveFailedPodsArgs{ExitCodes: []int32{1}, ExcludeOwnerKinds: []string{"Job"}, MinPodLifetimeSeconds: ptr.To[uint](600)},
			evictor: &defaultevictor.DefaultEvictorArgs{EvictFailedBarePods: true}, want: []string{"ns/bare"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := plugintest.New(t, plugintest.Options{DefaultEvictor: tc.evictor}, objs...)
			pl, err := New(t.Context(), &tc.args, env.Handle())
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
