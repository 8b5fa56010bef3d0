package podlifetime

import "k8s.io/apimachinery/pkg/util/validation/field"

// Validate implements framework.ArgsValidator.
func (a *PodLifeTimeArgs) Validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if a.MaxPodLifeTimeSeconds != nil && *a.MaxPodLifeTimeSeconds <= 0 {
		errs = append(errs, field.Invalid(path.Child("maxPodLifeTimeSeconds"), *a.MaxPodLifeTimeSeconds, "must be positive"))
	}
	for i, ns := range a.Namespaces {
		if ns == "" {
			errs = append(errs, field.Required(path.Child("namespaces").Index(i), "namespace name"))
		}
	}
	return errs
}
