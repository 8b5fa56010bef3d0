package highnodeutilization

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// ValidateHighNodeUtilizationArgs checks the args; paths are below path.
func ValidateHighNodeUtilizationArgs(path *field.Path, a *HighNodeUtilizationArgs) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, pluginutil.ValidateThresholds(path.Child("thresholds"), a.Thresholds, true)...)
	if a.NumberOfNodes < 0 {
		errs = append(errs, field.Invalid(path.Child("numberOfNodes"), a.NumberOfNodes, "must not be negative"))
	}
	errs = append(errs, pluginutil.ValidateNamespaces(path.Child("evictableNamespaces"), a.EvictableNamespaces)...)
	for i, m := range a.EvictionModes {
		if m != EvictionModeOnlyThresholdingResources {
			errs = append(errs, field.NotSupported(path.Child("evictionModes").Index(i), m, []EvictionMode{EvictionModeOnlyThresholdingResources}))
		}
	}
	return errs
}

// Validate implements framework.ArgsValidator.
func (a *HighNodeUtilizationArgs) Validate(path *field.Path) field.ErrorList {
	return ValidateHighNodeUtilizationArgs(path, a)
}
