package removepodsviolatinginterpodantiaffinity

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// ValidateRemovePodsViolatingInterPodAntiAffinityArgs checks the args; paths are below path.
func ValidateRemovePodsViolatingInterPodAntiAffinityArgs(path *field.Path, a *RemovePodsViolatingInterPodAntiAffinityArgs) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, pluginutil.ValidateNamespaces(path.Child("namespaces"), a.Namespaces)...)
	errs = append(errs, pluginutil.ValidateLabelSelector(path.Child("labelSelector"), a.LabelSelector)...)
	return errs
}

// Validate implements framework.ArgsValidator.
func (a *RemovePodsViolatingInterPodAntiAffinityArgs) Validate(path *field.Path) field.ErrorList {
	return ValidateRemovePodsViolatingInterPodAntiAffinityArgs(path, a)
}
