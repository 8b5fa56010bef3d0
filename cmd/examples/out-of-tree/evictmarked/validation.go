package evictmarked

import (
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate implements framework.ArgsValidator.
func (a *EvictMarkedArgs) Validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(a.LabelKey) {
		errs = append(errs, field.Invalid(path.Child("labelKey"), a.LabelKey, msg))
	}
	for i, ns := range a.Namespaces {
		for _, msg := range validation.IsDNS1123Label(ns) {
			errs = append(errs, field.Invalid(path.Child("namespaces").Index(i), ns, msg))
		}
	}
	return errs
}
