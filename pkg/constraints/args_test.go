package constraints

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// TestUsageEstimateArgsDefaults: unset fields get the defaults; set ones, {} included, are kept.
func TestUsageEstimateArgsDefaults(t *testing.T) {
	var a UsageEstimateArgs
	a.SetDefaults()
	if a.ResourceWeights["cpu"] != 1 || a.Expiration() != DefaultNodeMetricExpirationSeconds || a.EstimatedScalingFactors["cpu"] != 85 ||
		a.EstimatedSecondsAfterPodScheduled == nil || a.SecondsAfterScheduled() != 0 {
		t.Fatalf("defaults %+v", a)
	}
	b := UsageEstimateArgs{EstimatedScalingFactors: map[corev1.ResourceName]int64{}, NodeMetricExpirationSeconds: ptr.To[int64](0)}
	b.SetDefaults()
	if len(b.EstimatedScalingFactors) != 0 || b.Expiration() != 0 {
		t.Fatalf("set fields changed by defaulting: %+v", b)
	}
}

// TestUsageEstimateArgsValidate: the shared checks, and each side's limits.
func TestUsageEstimateArgsValidate(t *testing.T) {
	score, order := UsageLimits{ScoreWeights: true}, UsageLimits{ZeroNeverExpires: true}
	fields := func(errs field.ErrorList) []string {
		var out []string
		for _, e := range errs {
			out = append(out, e.Field)
		}
		slices.Sort(out)
		return out
	}
	cases := []struct {
		name   string
		args   UsageEstimateArgs
		limits UsageLimits
		want   []string
	}{
		{"defaults pass the scheduler's limits", defaulted(), score, nil},
		{"defaults pass the descheduler's limits", defaulted(), order, nil},
		{"weight above 100 scores wrong", UsageEstimateArgs{ResourceWeights: map[corev1.ResourceName]int64{"cpu": 101}, NodeMetricExpirationSeconds: ptr.To[int64](1)}, score, []string{"a.resourceWeights[cpu]"}},
		{"weight above 100 orders fine", UsageEstimateArgs{ResourceWeights: map[corev1.ResourceName]int64{"cpu": 101}}, order, nil},
		{"all weights zero", UsageEstimateArgs{ResourceWeights: map[corev1.ResourceName]int64{"cpu": 0}, NodeMetricExpirationSeconds: ptr.To[int64](1)}, score, []string{"a.resourceWeights"}},
		{"negative weight", UsageEstimateArgs{ResourceWeights: map[corev1.ResourceName]int64{"cpu": -1}}, order, []string{"a.resourceWeights[cpu]"}},
		{"expiry 0 for the scheduler", UsageEstimateArgs{NodeMetricExpirationSeconds: ptr.To[int64](0)}, score, []string{"a.nodeMetricExpirationSeconds"}},
		{"expiry 0 never expires", UsageEstimateArgs{NodeMetricExpirationSeconds: ptr.To[int64](0)}, order, nil},
		{"negative expiry", UsageEstimateArgs{NodeMetricExpirationSeconds: ptr.To[int64](-1)}, order, []string{"a.nodeMetricExpirationSeconds"}},
		{"estimate out of range", UsageEstimateArgs{EstimatedScalingFactors: map[corev1.ResourceName]int64{"cpu": 101, "": 1}, EstimatedSecondsAfterPodScheduled: ptr.To[int64](-1)}, order,
			[]string{"a.estimatedScalingFactors[]", "a.estimatedScalingFactors[cpu]", "a.estimatedSecondsAfterPodScheduled"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := fields(tc.args.Validate(field.NewPath("a"), tc.limits)); !slices.Equal(got, tc.want) {
				t.Fatalf("errors at %v, want %v", got, tc.want)
			}
		})
	}
}

func defaulted() UsageEstimateArgs {
	var a UsageEstimateArgs
	a.SetDefaults()
	return a
}
