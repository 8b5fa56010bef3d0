package lownodeutilization

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// ValidateLowNodeUtilizationArgs checks the args; paths are below path.
func ValidateLowNodeUtilizationArgs(path *field.Path, a *LowNodeUtilizationArgs) field.ErrorList {
	var errs field.ErrorList
	tp, ttp := path.Child("thresholds"), path.Child("targetThresholds")
	errs = append(errs, pluginutil.ValidateThresholds(tp, a.Thresholds, true)...)
	errs = append(errs, pluginutil.ValidateThresholds(ttp, a.TargetThresholds, true)...)
	for _, r := range pluginutil.SortedResourceNames(a.Thresholds) {
		target, ok := a.TargetThresholds[r]
		switch {
		case !ok && len(a.TargetThresholds) > 0:
			errs = append(errs, field.Required(ttp.Key(string(r)), "thresholds and targetThresholds must name the same resources"))
		case ok && !a.UseDeviationThresholds && a.Thresholds[r] > target:
			errs = append(errs, field.Invalid(tp.Key(string(r)), float64(a.Thresholds[r]), "must not be above the target threshold"))
		}
	}
	for _, r := range pluginutil.SortedResourceNames(a.TargetThresholds) {
		if _, ok := a.Thresholds[r]; !ok && len(a.Thresholds) > 0 {
			errs = append(errs, field.Required(tp.Key(string(r)), "thresholds and targetThresholds must name the same resources"))
		}
	}
	if a.NumberOfNodes < 0 {
		errs = append(errs, field.Invalid(path.Child("numberOfNodes"), a.NumberOfNodes, "must not be negative"))
	}
	errs = append(errs, pluginutil.ValidateNamespaces(path.Child("evictableNamespaces"), a.EvictableNamespaces)...)
	errs = append(errs, validateMetricsUtilization(path, a)...)
	return errs
}

// Validate implements framework.ArgsValidator.
func (a *LowNodeUtilizationArgs) Validate(path *field.Path) field.ErrorList {
	return ValidateLowNodeUtilizationArgs(path, a)
}
