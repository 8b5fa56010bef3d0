// Package validation checks the internal args of Accord's scheduler plugins. Errors carry field
// paths relative to the path the caller passes, e.g. "args.usageThresholds[cpu]".
package validation

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/apis/config"
	"github.com/accord-sched/accord/pkg/constraints"
)

// MaxPercent is the highest usage threshold.
const MaxPercent = constraints.MaxPercent

// MaxWeight is the highest resource weight.
const MaxWeight = constraints.MaxWeight

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
	errs = append(errs, constraints.ValidatePercentMap(path.Child("usageThresholds"), args.UsageThresholds, MaxPercent)...)
	return append(errs, args.UsageEstimateArgs.Validate(path, LoadAwareLimits)...)
}

// LoadAwareLimits are what LoadAware further requires of the shared args: the weights make its
// score (0..100, one positive), and metrics expire (nodeMetricExpirationSeconds greater than 0).
var LoadAwareLimits = constraints.UsageLimits{ScoreWeights: true}
