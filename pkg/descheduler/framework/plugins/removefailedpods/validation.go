package removefailedpods

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// ValidateRemoveFailedPodsArgs checks the args; paths are below path.
func ValidateRemoveFailedPodsArgs(path *field.Path, a *RemoveFailedPodsArgs) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, pluginutil.ValidateNamespaces(path.Child("namespaces"), a.Namespaces)...)
	errs = append(errs, pluginutil.ValidateLabelSelector(path.Child("labelSelector"), a.LabelSelector)...)
	for i, k := range a.ExcludeOwnerKinds {
		if k == "" {
			errs = append(errs, field.Invalid(path.Child("excludeOwnerKinds").Index(i), k, "must not be empty"))
		}
	}
	for i, c := range a.ExitCodes {
		if c < 0 || c > 255 {
			errs = append(errs, field.Invalid(path.Child("exitCodes").Index(i), c, "must be an exit code between 0 and 255"))
		}
	}
	return errs
}

// Validate implements framework.ArgsValidator.
func (a *RemoveFailedPodsArgs) Validate(path *field.Path) field.ErrorList {
	return ValidateRemoveFailedPodsArgs(path, a)
}
