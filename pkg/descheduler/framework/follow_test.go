package framework

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/accord-sched/accord/pkg/constraints"
)

// shared stands for a constraints struct both sides embed.
type shared struct {
	Period  *int64                        `json:"period,omitempty"`
	Factors map[corev1.ResourceName]int64 `json:"factors,omitempty"`
	Order   map[corev1.ResourceName]int64 `json:"order,omitempty"`
}

// schedArgs stand for a scheduler plugin's internal args: no JSON names on its own fields.
type schedArgs struct {
	Limits map[corev1.ResourceName]int64
	shared `json:",inline"`
}

// deschedArgs stand for the descheduler plugin's args.
type deschedArgs struct {
	High     map[corev1.ResourceName]int64 `json:"high,omitempty"`
	Low      map[corev1.ResourceName]int64 `json:"low,omitempty"`
	Relative bool                          `json:"relative,omitempty"`
	shared   `json:",inline"`
}

func (a *deschedArgs) SetDefaults() {
	if a.High == nil && a.Low == nil {
		a.High = map[corev1.ResourceName]int64{"cpu": 70}
		a.Low = map[corev1.ResourceName]int64{"cpu": 40, "memory": 50}
	}
}

var testFollowing = constraints.Following{
	Scheduler: "Rule",
	Fields: []constraints.FollowedField{
		{Scheduler: "limits", Descheduler: "high", Unless: "relative", Caps: "low"},
		{Scheduler: "period"},
		{Scheduler: "factors", PositiveEntries: true},
		{Scheduler: "order", MayDiffer: true},
	},
}

func follow(given []string, a *deschedArgs, profiles ...any) field.ErrorList {
	f := &Follow{Path: field.NewPath("args"), Given: map[string]bool{}, Scheduler: map[string][]SchedulerArgs{}}
	for _, g := range given {
		f.Given[g] = true
	}
	for i, p := range profiles {
		f.Scheduler["Rule"] = append(f.Scheduler["Rule"], SchedulerArgs{SchedulerName: string(rune('a' + i)), Args: p, File: "s.yaml", Path: field.NewPath("profiles").Index(i).Child("args")})
	}
	return FollowShared(f, a, testFollowing, nil)
}

func sched(limit, period int64, factors map[corev1.ResourceName]int64) *schedArgs {
	return &schedArgs{Limits: map[corev1.ResourceName]int64{"cpu": limit, "memory": limit},
		shared: shared{Period: ptr.To(period), Factors: factors, Order: map[corev1.ResourceName]int64{"cpu": 1}}}
}

// TestFollowSharedFillsIn: fields left out take the first profile's values (copies), the capped
// field its defaults capped at the followed one for the followed resources.
func TestFollowSharedFillsIn(t *testing.T) {
	s := sched(30, 60, map[corev1.ResourceName]int64{"cpu": 80})
	a := &deschedArgs{}
	if errs := follow(nil, a, s); len(errs) != 0 {
		t.Fatal(errs)
	}
	if a.High["cpu"] != 30 || a.High["memory"] != 30 || *a.Period != 60 || a.Factors["cpu"] != 80 || a.Order["cpu"] != 1 {
		t.Fatalf("followed args %+v", a)
	}
	// Low: cpu default 40 capped at 30, memory default 50 capped at 30.
	if len(a.Low) != 2 || a.Low["cpu"] != 30 || a.Low["memory"] != 30 {
		t.Fatalf("low %v, want the defaults capped at the followed high", a.Low)
	}
	a.High["cpu"], *a.Period = 99, 99
	if s.Limits["cpu"] != 30 || *s.Period != 60 {
		t.Fatal("the followed values share memory with the scheduler's")
	}
}

// TestFollowSharedContradictions: a set field that differs names both paths; a positive-entries
// field ignores zero entries; a may-differ field is kept; an unless field is left alone; profiles
// that disagree are an error on the field the policy left out.
func TestFollowSharedContradictions(t *testing.T) {
	a := &deschedArgs{High: map[corev1.ResourceName]int64{"cpu": 50, "memory": 30}, Low: map[corev1.ResourceName]int64{"cpu": 10},
		shared: shared{Period: ptr.To[int64](60), Factors: map[corev1.ResourceName]int64{"cpu": 80, "memory": 0}, Order: map[corev1.ResourceName]int64{"memory": 5}}}
	errs := follow([]string{"high", "low", "period", "factors", "order"}, a, sched(30, 60, map[corev1.ResourceName]int64{"cpu": 80}))
	if len(errs) != 1 || errs[0].Field != "args.high" || !strings.Contains(errs[0].Detail, "contradicts the scheduler configuration: s.yaml profiles[0].args.limits is {\"cpu\":30,\"memory\":30}") {
		t.Fatalf("errs %v, want only high contradicting limits", errs)
	}
	if a.Order["memory"] != 5 || a.Low["cpu"] != 10 {
		t.Fatalf("args %+v: the set order and low must be kept", a)
	}

	a = &deschedArgs{Relative: true, High: map[corev1.ResourceName]int64{"cpu": 5}}
	if errs := follow([]string{"high", "relative"}, a, sched(30, 60, nil)); len(errs) != 0 || a.High["cpu"] != 5 {
		t.Fatalf("relative: errs %v, high %v; want high its own", errs, a.High)
	}

	a = &deschedArgs{}
	errs = follow(nil, a, sched(30, 60, nil), sched(30, 90, nil))
	if len(errs) != 1 || errs[0].Field != "args.period" || !strings.Contains(errs[0].Detail, "the scheduler profiles this plugin follows disagree: s.yaml profiles[1].args.period is 90") {
		t.Fatalf("errs %v, want the profiles' disagreement on period", errs)
	}
}

// TestFollowSharedWrongArgs: scheduler args without the field are an internal error naming them.
func TestFollowSharedWrongArgs(t *testing.T) {
	for _, args := range []any{nil, &runtime.Unknown{}} {
		errs := follow(nil, &deschedArgs{}, args)
		if len(errs) != 1 || errs[0].Type != field.ErrorTypeInternal || !strings.Contains(errs[0].Error(), "profiles[0].args.limits") {
			t.Fatalf("args %T: errs %v, want one internal error naming limits", args, errs)
		}
	}
}

// TestFollowDecoded: an out-of-tree scheduler plugin's args (*runtime.Unknown, or nil without a
// pluginConfig) are decoded by the plugin's own decode, then followed as FollowShared follows typed
// args; an error decoding them names the scheduler's args.
func TestFollowDecoded(t *testing.T) {
	decode := func(obj runtime.Object) (any, error) {
		if obj == nil {
			return sched(20, 30, nil), nil
		}
		u := obj.(*runtime.Unknown)
		if string(u.Raw) != "limit 30" {
			return nil, fmt.Errorf("unknown field in %q", u.Raw)
		}
		return sched(30, 60, nil), nil
	}
	a := &deschedArgs{}
	if errs := FollowDecoded(followOf(nil, &runtime.Unknown{Raw: []byte("limit 30")}), a, testFollowing, nil, decode); len(errs) != 0 {
		t.Fatal(errs)
	}
	if a.High["cpu"] != 30 || *a.Period != 60 {
		t.Fatalf("followed args %+v, want the decoded scheduler args'", a)
	}
	a = &deschedArgs{}
	if errs := FollowDecoded(followOf(nil, nil), a, testFollowing, nil, decode); len(errs) != 0 || a.High["cpu"] != 20 {
		t.Fatalf("no pluginConfig: errs %v, high %v; want the decoded defaults", errs, a.High)
	}
	a = &deschedArgs{shared: shared{Period: ptr.To[int64](90)}}
	errs := FollowDecoded(followOf([]string{"period"}, &runtime.Unknown{Raw: []byte("limit 30")}), a, testFollowing, nil, decode)
	if len(errs) != 1 || errs[0].Field != "args.period" || !strings.Contains(errs[0].Detail, "s.yaml profiles[0].args.period is 60") {
		t.Fatalf("errs %v, want period contradicting the decoded scheduler args", errs)
	}
	errs = FollowDecoded(followOf(nil, &runtime.Unknown{Raw: []byte("limits: 30")}), &deschedArgs{}, testFollowing, nil, decode)
	if len(errs) != 1 || errs[0].Field != "args" || !strings.Contains(errs[0].Detail, "s.yaml profiles[0].args, do not decode: unknown field") {
		t.Fatalf("errs %v, want one error naming the scheduler's args that do not decode", errs)
	}
}

// followOf is the Follow of one scheduler profile with args for the plugin "Rule".
func followOf(given []string, args any) *Follow {
	f := &Follow{Path: field.NewPath("args"), Given: map[string]bool{}, Scheduler: map[string][]SchedulerArgs{
		"Rule": {{SchedulerName: "a", Args: args, File: "s.yaml", Path: field.NewPath("profiles").Index(0).Child("args")}}}}
	for _, g := range given {
		f.Given[g] = true
	}
	return f
}
