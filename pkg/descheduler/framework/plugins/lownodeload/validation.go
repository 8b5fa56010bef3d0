package lownodeload

import (
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/pkg/constraints"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// ValidateLowNodeLoadArgs checks the args; paths are below path.
func ValidateLowNodeLoadArgs(path *field.Path, a *LowNodeLoadArgs) field.ErrorList {
	var errs field.ErrorList
	hp, lp := path.Child("highThresholds"), path.Child("lowThresholds")
	if len(a.HighThresholds) == 0 {
		errs = append(errs, field.Required(hp, "at least one resource threshold is required"))
	}
	if len(a.LowThresholds) == 0 {
		errs = append(errs, field.Required(lp, "at least one resource threshold is required"))
	}
	for _, name := range pluginutil.SortedResourceNames(a.HighThresholds) {
		v := a.HighThresholds[name]
		if v < 0 || v > 100 {
			errs = append(errs, field.Invalid(hp.Key(string(name)), v, "must be a percentage between 0 and 100"))
		}
		errs = append(errs, pluginutil.ValidateResourceName(hp.Key(string(name)), name)...)
		if _, ok := a.LowThresholds[name]; !ok && len(a.LowThresholds) > 0 {
			errs = append(errs, field.Required(lp.Key(string(name)), "lowThresholds and highThresholds must name the same resources"))
		}
	}
	for _, name := range pluginutil.SortedResourceNames(a.LowThresholds) {
		v := a.LowThresholds[name]
		if v < 0 || v > 100 {
			errs = append(errs, field.Invalid(lp.Key(string(name)), v, "must be a percentage between 0 and 100"))
		}
		errs = append(errs, pluginutil.ValidateResourceName(lp.Key(string(name)), name)...)
		high, ok := a.HighThresholds[name]
		switch {
		case !ok && len(a.HighThresholds) > 0:
			errs = append(errs, field.Required(hp.Key(string(name)), "lowThresholds and highThresholds must name the same resources"))
		case ok && !a.UseDeviationThresholds && v > high:
			errs = append(errs, field.Invalid(lp.Key(string(name)), v, "must not be above the high threshold"))
		}
	}
	if a.NumberOfNodes < 0 {
		errs = append(errs, field.Invalid(path.Child("numberOfNodes"), a.NumberOfNodes, "must not be negative"))
	}
	errs = append(errs, a.UsageEstimateArgs.Validate(path, Limits)...)
	for _, name := range pluginutil.SortedResourceNames(a.EstimatedScalingFactors) {
		errs = append(errs, pluginutil.ValidateResourceName(path.Child("estimatedScalingFactors").Key(string(name)), name)...)
	}
	if a.ConsecutiveAbnormalities < 1 {
		errs = append(errs, field.Invalid(path.Child("consecutiveAbnormalities"), a.ConsecutiveAbnormalities, "must be at least 1"))
	}
	errs = append(errs, pluginutil.ValidateNamespaces(path.Child("evictableNamespaces"), a.EvictableNamespaces)...)
	names := sets.New[string]()
	for i, s := range a.PodSelectors {
		p := path.Child("podSelectors").Index(i)
		if s.Name != "" && names.Has(s.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), s.Name))
		}
		names.Insert(s.Name)
		if s.Selector == nil {
			errs = append(errs, field.Required(p.Child("selector"), "a pod selector needs a selector"))
		}
		errs = append(errs, pluginutil.ValidateLabelSelector(p.Child("selector"), s.Selector)...)
	}
	return errs
}

// Validate implements framework.ArgsValidator.
func (a *LowNodeLoadArgs) Validate(path *field.Path) field.ErrorList {
	return ValidateLowNodeLoadArgs(path, a)
}

// Limits are what LowNodeLoad further requires of the shared args: the weights only order (any
// non-negative weight), and a nodeMetricExpirationSeconds of 0 means metrics never expire.
var Limits = constraints.UsageLimits{ZeroNeverExpires: true}
