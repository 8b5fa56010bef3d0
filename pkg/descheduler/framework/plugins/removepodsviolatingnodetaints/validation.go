package removepodsviolatingnodetaints

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// ValidateRemovePodsViolatingNodeTaintsArgs checks the args; paths are below path.
func ValidateRemovePodsViolatingNodeTaintsArgs(path *field.Path, a *RemovePodsViolatingNodeTaintsArgs) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, pluginutil.ValidateNamespaces(path.Child("namespaces"), a.Namespaces)...)
	errs = append(errs, pluginutil.ValidateLabelSelector(path.Child("labelSelector"), a.LabelSelector)...)
	if len(a.ExcludedTaints) > 0 && len(a.IncludedTaints) > 0 {
		errs = append(errs, field.Forbidden(path.Child("includedTaints"), "only one of excludedTaints and includedTaints may be set"))
	}
	errs = append(errs, validateTaints(path.Child("excludedTaints"), a.ExcludedTaints)...)
	errs = append(errs, validateTaints(path.Child("includedTaints"), a.IncludedTaints)...)
	return errs
}

func validateTaints(path *field.Path, taints []string) field.ErrorList {
	var errs field.ErrorList
	for i, t := range taints {
		key, value, hasValue := strings.Cut(t, "=")
		for _, msg := range validation.IsQualifiedName(key) {
			errs = append(errs, field.Invalid(path.Index(i), t, "key: "+msg))
		}
		if hasValue {
			for _, msg := range validation.IsValidLabelValue(value) {
				errs = append(errs, field.Invalid(path.Index(i), t, "value: "+msg))
			}
		}
	}
	return errs
}

// Validate implements framework.ArgsValidator.
func (a *RemovePodsViolatingNodeTaintsArgs) Validate(path *field.Path) field.ErrorList {
	return ValidateRemovePodsViolatingNodeTaintsArgs(path, a)
}
