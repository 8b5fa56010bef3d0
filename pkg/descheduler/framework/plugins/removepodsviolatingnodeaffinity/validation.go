package removepodsviolatingnodeaffinity

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

var types = []string{Required, Preferred}

// ValidateRemovePodsViolatingNodeAffinityArgs checks the args; paths are below path.
func ValidateRemovePodsViolatingNodeAffinityArgs(path *field.Path, a *RemovePodsViolatingNodeAffinityArgs) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, pluginutil.ValidateNamespaces(path.Child("namespaces"), a.Namespaces)...)
	errs = append(errs, pluginutil.ValidateLabelSelector(path.Child("labelSelector"), a.LabelSelector)...)
	if len(a.NodeAffinityType) == 0 {
		errs = append(errs, field.Required(path.Child("nodeAffinityType"), "name at least one node affinity type"))
	}
	for i, t := range a.NodeAffinityType {
		if !slices.Contains(types, t) {
			errs = append(errs, field.NotSupported(path.Child("nodeAffinityType").Index(i), t, types))
		}
	}
	return errs
}

// Validate implements framework.ArgsValidator.
func (a *RemovePodsViolatingNodeAffinityArgs) Validate(path *field.Path) field.ErrorList {
	return ValidateRemovePodsViolatingNodeAffinityArgs(path, a)
}
