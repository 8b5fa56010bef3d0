package podlifetime

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// ValidatePodLifeTimeArgs checks the args; paths are below path.
func ValidatePodLifeTimeArgs(path *field.Path, a *PodLifeTimeArgs) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, pluginutil.ValidateNamespaces(path.Child("namespaces"), a.Namespaces)...)
	errs = append(errs, pluginutil.ValidateLabelSelector(path.Child("labelSelector"), a.LabelSelector)...)
	if a.MaxPodLifeTimeSeconds == nil {
		errs = append(errs, field.Required(path.Child("maxPodLifeTimeSeconds"), "the maximum pod lifetime is required"))
	}
	errs = append(errs, pluginutil.ValidateStates(path.Child("states"), a.States, pluginutil.PodStates)...)
	return errs
}

// Validate implements framework.ArgsValidator.
func (a *PodLifeTimeArgs) Validate(path *field.Path) field.ErrorList {
	return ValidatePodLifeTimeArgs(path, a)
}
