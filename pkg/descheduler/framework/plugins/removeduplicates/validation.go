package removeduplicates

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// ValidateRemoveDuplicatesArgs checks the args; paths are below path.
func ValidateRemoveDuplicatesArgs(path *field.Path, a *RemoveDuplicatesArgs) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, pluginutil.ValidateNamespaces(path.Child("namespaces"), a.Namespaces)...)
	for i, k := range a.ExcludeOwnerKinds {
		if k == "" {
			errs = append(errs, field.Invalid(path.Child("excludeOwnerKinds").Index(i), k, "must not be empty"))
		}
	}
	return errs
}

// Validate implements framework.ArgsValidator.
func (a *RemoveDuplicatesArgs) Validate(path *field.Path) field.ErrorList {
	return ValidateRemoveDuplicatesArgs(path, a)
}
