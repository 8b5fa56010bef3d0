package removepodshavingtoomanyrestarts

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/defaultevictor"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/plugintest"
)

func TestArgs(t *testing.T) {
	cases := []struct {
		name string
		args RemovePodsHavingTooManyRestartsArgs
		errs []string
	}{
		{name: "threshold required", errs: []string{"a.podRestartThreshold"}},
		{name: "negative threshold", args: RemovePodsHavingTooManyRestartsArgs{PodRestartThreshold: -3}, errs: []string{"a.podRestartThreshold"}},
		{name: "bad state", args: RemovePodsHavingTooManyRestartsArgs{PodRestartThreshold: 1, States: []string{"Running", "Pending"}}, errs: []string{"a.states[1]"}},
		{name: "valid", args: RemovePodsHavingTooManyRestartsArgs{PodRestartThreshold: 1, States: []string{"CrashLoopBackOff"}}},
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

func restarting(name string, restarts, initRestarts int32, waiting string) *corev1.Pod {
	p := fake.Pod("ns", name, "n1", 100)
	s := corev1.ContainerStatus{Name: "c", RestartCount: restarts}
	if waiting != "" {
		s.State.Waiting = &corev1.ContainerStateWaiting{Reason: waiting}
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{s}
	p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "i", RestartCount: initRestarts}}
	return p
}

func TestDeschedule(t *testing.T) {
	bare := restarting("bare", 50, 0, "")
	bare.OwnerReferences = nil
	objs := []runtime.Object{
		fake.Node("n1", nil, 8, 16),
		restarting("at-threshold", 10, 0, ""), restarting("below", 9, 0, ""), restarting("init-heavy", 5, 5, ""),
		restarting("crashing", 12, 0, "CrashLoopBackOff"), bare,
	}
	cases := []struct {
		name    string
		args    RemovePodsHavingTooManyRestartsArgs
		evictor *defaultevictor.DefaultEvictorArgs
		want    []string
	}{
		{name: "threshold is inclusive", args: RemovePodsHavingTooManyRestartsArgs{PodRestartThreshold: 10}, want: []string{"ns/at-threshold", "ns/crashing"}},
		{name: "init containers", args: RemovePodsHavingTooManyRestartsArgs{PodRestartThreshold: 10, IncludingInitContainers: true}, want: []string{"ns/at-threshold", "ns/crashing", "ns/init-heavy"}},
		{name: "states", args: RemovePodsHavingTooManyRestartsArgs{PodRestartThreshold: 10, States: []string{"CrashLoopBackOff"}}, want: []string{"ns/crashing"}},
		{name: "DefaultEvictor allows bare pods", args: RemovePodsHavingTooManyRestartsArgs{PodRestartThreshold: 40},
			evictor: &defaultevictor.DefaultEvictorArgs{PodProtections: defaultevictor.PodProtections{DefaultDisabled: []defaultevictor.PodProtection{defaultevictor.BarePods}}}, want: []string{"ns/bare"}},
		{name: "DefaultEvictor protects bare pods", args: RemovePodsHavingTooManyRestartsArgs{PodRestartThreshold: 40}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := plugintest.New(t, plugintest.Options{DefaultEvictor: tc.evictor}, objs...)
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
