// Package validation checks the internal args of Accord's scheduler plugins. Errors carry field
// paths relative to the path the caller passes, e.g. "args.usageThresholds[cpu]".
package validation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/apis/config"
)

// MaxPercent is the highest usage threshold.
const MaxPercent int64 = 100

// MaxWeight is the highest resource weight.
const MaxWeight int64 = 100

// ValidateNodeCRDResourceFitArgs validates NodeCRDResourceFit's args.
func ValidateNodeCRDResourceFitArgs(path *field.Path, args *config.NodeCRDResourceFitArgs) field.ErrorList {
	var errs field.ErrorList
	if args == nil {
		return append(errs, field.Required(path, "args are required"))
	}
	return append(errs, ValidateMissingCRPolicy(path.Child("missingCRPolicy"), args.MissingCRPolicy)...)
}

// ValidateMissingCRPolicy checks a missingCRPolicy value at path. The scheduler's NodeCRDResourceFit
// and the descheduler's NodeCRDResourceFit and DefaultEvictor all take this arg and must agree on it.
func ValidateMissingCRPolicy(path *field.Path, policy config.MissingCRPolicy) field.ErrorList {
	switch policy {
	case config.MissingCRPolicyReject, config.MissingCRPolicyIgnore:
		return nil
	}
	return field.ErrorList{field.NotSupported(path, policy,
		[]config.MissingCRPolicy{config.MissingCRPolicyReject, config.MissingCRPolicyIgnore})}
}

// ValidateLoadAwareArgs validates LoadAware's args: thresholds in 0..100, weights in 0..100, at
// least one positive weight when weights are given, resource names that are valid, and a positive
// metric expiration.
func ValidateLoadAwareArgs(path *field.Path, args *config.LoadAwareArgs) field.ErrorList {
	var errs field.ErrorList
	if args == nil {
		return append(errs, field.Required(path, "args are required"))
	}
	errs = append(errs, validatePercentMap(path.Child("usageThresholds"), args.UsageThresholds, MaxPercent)...)
	weights := path.Child("resourceWeights")
	errs = append(errs, validatePercentMap(weights, args.ResourceWeights, MaxWeight)...)
	if len(args.ResourceWeights) > 0 {
		positive := false
		for _, w := range args.ResourceWeights {
			positive = positive || w > 0
		}
		if !positive {
			errs = append(errs, field.Invalid(weights, args.ResourceWeights, "at least one weight must be positive"))
		}
	}
	if args.NodeMetricExpirationSeconds <= 0 {
		errs = append(errs, field.Invalid(path.Child("nodeMetricExpirationSeconds"), args.NodeMetricExpirationSeconds, "must be greater than 0"))
	}
	errs = append(errs, ValidateEstimate(path, args.EstimatedScalingFactors, args.EstimatedSecondsAfterPodScheduled)...)
	return errs
}

// ValidateEstimate validates the usage estimate's args, shared by LoadAware and LowNodeLoad:
// scaling factors in 0..100 with valid resource names, and a non-negative period.
func ValidateEstimate(path *field.Path, factors map[corev1.ResourceName]int64, secondsAfterScheduled int64) field.ErrorList {
	errs := validatePercentMap(path.Child("estimatedScalingFactors"), factors, MaxPercent)
	if secondsAfterScheduled < 0 {
		errs = append(errs, field.Invalid(path.Child("estimatedSecondsAfterPodScheduled"), secondsAfterScheduled, "must not be negative"))
	}
	return errs
}

func validatePercentMap(path *field.Path, m map[corev1.ResourceName]int64, limit int64) field.ErrorList {
	var errs field.ErrorList
	for name, v := range m {
		p := path.Key(string(name))
		if name == "" {
			errs = append(errs, field.Invalid(p, name, "resource name must not be empty"))
			continue
		}
		if v < 0 || v > limit {
			errs = append(errs, field.Invalid(p, v, fmt.Sprintf("must be between 0 and %d", limit)))
		}
	}
	return errs
}
