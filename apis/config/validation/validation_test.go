package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/accord-sched/accord/apis/config"
	"github.com/accord-sched/accord/pkg/constraints"
)

func fields(errs field.ErrorList) sets.Set[string] {
	out := sets.New[string]()
	for _, e := range errs {
		out.Insert(e.Field)
	}
	return out
}

func TestValidateNodeCRDResourceFitArgs(t *testing.T) {
	tests := []struct {
		name       string
		args       *config.NodeCRDResourceFitArgs
		wantFields []string
	}{
		{name: "reject", args: &config.NodeCRDResourceFitArgs{MissingCRPolicy: config.MissingCRPolicyReject}},
		{name: "ignore", args: &config.NodeCRDResourceFitArgs{MissingCRPolicy: config.MissingCRPolicyIgnore}},
		{name: "unknown policy", args: &config.NodeCRDResourceFitArgs{MissingCRPolicy: "Maybe"}, wantFields: []string{"args.missingCRPolicy"}},
		{name: "empty policy", args: &config.NodeCRDResourceFitArgs{}, wantFields: []string{"args.missingCRPolicy"}},
		{name: "nil", args: nil, wantFields: []string{"args"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := ValidateNodeCRDResourceFitArgs(field.NewPath("args"), tt.args)
			if got, want := fields(errs), sets.New(tt.wantFields...); !got.Equal(want) {
				t.Fatalf("error fields %v, want %v (errors: %v)", sets.List(got), sets.List(want), errs)
			}
		})
	}
}

func TestValidateLoadAwareArgs(t *testing.T) {
	valid := func() *config.LoadAwareArgs {
		return &config.LoadAwareArgs{
			UsageThresholds: map[corev1.ResourceName]int64{"cpu": 80, "memory": 0},
			UsageEstimateArgs: constraints.UsageEstimateArgs{
				ResourceWeights:             map[corev1.ResourceName]int64{"cpu": 1, "memory": 0},
				NodeMetricExpirationSeconds: ptr.To[int64](60),
			},
		}
	}
	tests := []struct {
		name       string
		mutate     func(*config.LoadAwareArgs)
		wantFields []string
	}{
		{name: "valid", mutate: func(*config.LoadAwareArgs) {}},
		{name: "no thresholds and no weights", mutate: func(a *config.LoadAwareArgs) { a.UsageThresholds, a.ResourceWeights = nil, nil }},
		{name: "threshold above 100", mutate: func(a *config.LoadAwareArgs) { a.UsageThresholds["cpu"] = 101 }, wantFields: []string{"args.usageThresholds[cpu]"}},
		{name: "negative threshold", mutate: func(a *config.LoadAwareArgs) { a.UsageThresholds["memory"] = -1 }, wantFields: []string{"args.usageThresholds[memory]"}},
		{name: "empty resource name", mutate: func(a *config.LoadAwareArgs) { a.UsageThresholds[""] = 10 }, wantFields: []string{"args.usageThresholds[]"}},
		{name: "weight above 100", mutate: func(a *config.LoadAwareArgs) { a.ResourceWeights["cpu"] = 1000 }, wantFields: []string{"args.resourceWeights[cpu]"}},
		{name: "all weights zero", mutate: func(a *config.LoadAwareArgs) { a.ResourceWeights["cpu"] = 0 }, wantFields: []string{"args.resourceWeights"}},
		{name: "expiration zero", mutate: func(a *config.LoadAwareArgs) { a.NodeMetricExpirationSeconds = ptr.To[int64](0) }, wantFields: []string{"args.nodeMetricExpirationSeconds"}},
		{name: "several at once", mutate: func(a *config.LoadAwareArgs) {
			a.UsageThresholds["cpu"] = 200
			a.NodeMetricExpirationSeconds = ptr.To[int64](-5)
		}, wantFields: []string{"args.usageThresholds[cpu]", "args.nodeMetricExpirationSeconds"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := valid()
			tt.mutate(args)
			errs := ValidateLoadAwareArgs(field.NewPath("args"), args)
			if got, want := fields(errs), sets.New(tt.wantFields...); !got.Equal(want) {
				t.Fatalf("error fields %v, want %v (errors: %v)", sets.List(got), sets.List(want), errs)
			}
		})
	}
}
