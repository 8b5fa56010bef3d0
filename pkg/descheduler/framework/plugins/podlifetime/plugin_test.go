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
	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
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
		{name: "a criterion required", errs: []string{"a"}},
		{name: "states alone", args: PodLifeTimeArgs{States: []string{"CrashLoopBackOff", "OOMKilled"}}},
		{name: "exit codes alone", args: PodLifeTimeArgs{ExitCodes: []int32{137}}},
		{name: "conditions alone", args: PodLifeTimeArgs{Conditions: []PodConditionFilter{{Type: "Ready", Status: "False"}}}},
		{name: "empty condition", args: PodLifeTimeArgs{Conditions: []PodConditionFilter{{}}}, errs: []string{"a.conditions[0]"}},
		{name: "owner kinds include and exclude", args: PodLifeTimeArgs{ExitCodes: []int32{1},
			OwnerKinds: &OwnerKinds{Include: []string{"Job"}, Exclude: []string{"ReplicaSet"}}}, errs: []string{"a.ownerKinds"}},
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
	p := fake.Pod("ns", name, node, 100)
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
	crashing := func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c",
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}}
	}
	oom := func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}}}
	}
	initFailed := func(p *corev1.Pod) {
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "i", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 3}}}}
	}
	unready := func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady",
			LastTransitionTime: metav1.NewTime(now.Add(-20 * time.Minute))}}
	}
	jobOwned := func(p *corev1.Pod) { p.OwnerReferences[0].Kind = "Job" }
	objs := []runtime.Object{
		fake.Node("n1", nil, 8, 16), fake.Node("n2", nil, 8, 16),
		aged("young", "n1", time.Minute), aged("old", "n1", 2*time.Hour), aged("older", "n2", 3*time.Hour),
		aged("oldest-pending", "n2", 5*time.Hour, pending),
		aged("young-crashing", "n1", 2*time.Minute, crashing), aged("young-oom", "n2", 3*time.Minute, oom, jobOwned),
		aged("young-init-failed", "n1", 4*time.Minute, initFailed), aged("young-unready", "n2", 30*time.Minute, unready),
		aged("done", "n1", 10*time.Minute, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
	}
	cases := []struct {
		name    string
		args    PodLifeTimeArgs
		evictor *defaultevictor.DefaultEvictorArgs
		limit   int
		want    []string
	}{
		{name: "older than an hour", args: PodLifeTimeArgs{MaxPodLifeTimeSeconds: ptr.To[uint](3600)}, want: []string{"ns/old", "ns/older", "ns/oldest-pending"}},
		// Upstream's newer criteria, each without maxPodLifeTimeSeconds: any age.
		{name: "states without a lifetime", args: PodLifeTimeArgs{States: []string{"CrashLoopBackOff"}}, want: []string{"ns/young-crashing"}},
		{name: "a finished phase", args: PodLifeTimeArgs{States: []string{"Succeeded"}}, want: []string{"ns/done"}},
		{name: "terminated reason state", args: PodLifeTimeArgs{States: []string{"OOMKilled"}}, want: []string{"ns/young-oom"}},
		{name: "exit codes", args: PodLifeTimeArgs{ExitCodes: []int32{137, 3}}, want: []string{"ns/young-oom"}},
		{name: "exit codes of init containers", args: PodLifeTimeArgs{ExitCodes: []int32{137, 3}, IncludingInitContainers: true},
			want: []string{"ns/young-init-failed", "ns/young-oom"}},
		{name: "conditions", args: PodLifeTimeArgs{Conditions: []PodConditionFilter{{Type: "Ready", Status: "False"}}}, want: []string{"ns/young-unready"}},
		{name: "condition not old enough", args: PodLifeTimeArgs{Conditions: []PodConditionFilter{{Reason: "ContainersNotReady", MinTimeSinceLastTransitionSeconds: ptr.To[uint](3600)}}}},
		{name: "condition old enough", args: PodLifeTimeArgs{Conditions: []PodConditionFilter{{Reason: "ContainersNotReady", MinTimeSinceLastTransitionSeconds: ptr.To[uint](600)}}},
			want: []string{"ns/young-unready"}},
		{name: "owner kinds include", args: PodLifeTimeArgs{MaxPodLifeTimeSeconds: ptr.To[uint](60), OwnerKinds: &OwnerKinds{Include: []string{"Job"}}}, want: []string{"ns/young-oom"}},
		{name: "owner kinds exclude", args: PodLifeTimeArgs{MaxPodLifeTimeSeconds: ptr.To[uint](150), OwnerKinds: &OwnerKinds{Exclude: []string{"ReplicaSet"}}}, want: []string{"ns/young-oom"}},
		{name: "finished pods age out too", args: PodLifeTimeArgs{MaxPodLifeTimeSeconds: ptr.To[uint](300)}, limit: 100,
			want: []string{"ns/done", "ns/old", "ns/older", "ns/oldest-pending", "ns/young-unready"}},
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
