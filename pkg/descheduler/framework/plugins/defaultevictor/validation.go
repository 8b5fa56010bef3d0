package defaultevictor

import (
	"slices"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configvalidation "github.com/accord-sched/accord/apis/config/validation"
)

var (
	defaultProtections = []PodProtection{PodsWithLocalStorage, DaemonSetPods, SystemCriticalPods, FailedBarePods, BarePods, PodsWithPVC}
	extraProtections   = []PodProtection{PodsWithoutPDB, PodsWithPVC}
	noEvictionPolicies = []string{string(PreferredNoEvictionPolicy), string(MandatoryNoEvictionPolicy)}
)

// ValidateDefaultEvictorArgs checks the args; paths are below path.
func ValidateDefaultEvictorArgs(path *field.Path, a *DefaultEvictorArgs) field.ErrorList {
	var errs field.ErrorList
	if a.NodeSelector != "" {
		if _, err := labels.Parse(a.NodeSelector); err != nil {
			errs = append(errs, field.Invalid(path.Child("nodeSelector"), a.NodeSelector, err.Error()))
		}
	}
	if a.LabelSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(a.LabelSelector, metav1validation.LabelSelectorValidationOptions{}, path.Child("labelSelector"))...)
	}
	if t := a.PriorityThreshold; t != nil && t.Value != nil && t.Name != "" {
		errs = append(errs, field.Invalid(path.Child("priorityThreshold"), t, "set either value or name, not both"))
	}
	if a.MinReplicas < 0 {
		errs = append(errs, field.Invalid(path.Child("minReplicas"), a.MinReplicas, "must not be negative"))
	}
	if a.MinPodAge != nil && a.MinPodAge.Duration < 0 {
		errs = append(errs, field.Invalid(path.Child("minPodAge"), a.MinPodAge.Duration.String(), "must not be negative"))
	}
	if a.NoEvictionPolicy != "" && !slices.Contains(noEvictionPolicies, string(a.NoEvictionPolicy)) {
		errs = append(errs, field.NotSupported(path.Child("noEvictionPolicy"), a.NoEvictionPolicy, noEvictionPolicies))
	}
	// Empty is left to the defaults (Reject).
	if a.MissingCRPolicy != "" {
		errs = append(errs, configvalidation.ValidateMissingCRPolicy(path.Child("missingCRPolicy"), a.MissingCRPolicy)...)
	}
	for i, p := range a.PodProtections.DefaultDisabled {
		if !slices.Contains(defaultProtections, p) {
			errs = append(errs, field.NotSupported(path.Child("podProtections", "defaultDisabled").Index(i), p, defaultProtections))
		}
	}
	for i, p := range a.PodProtections.ExtraEnabled {
		if !slices.Contains(extraProtections, p) {
			errs = append(errs, field.NotSupported(path.Child("podProtections", "extraEnabled").Index(i), p, extraProtections))
		}
	}
	return errs
}

// Validate implements framework.ArgsValidator.
func (a *DefaultEvictorArgs) Validate(path *field.Path) field.ErrorList {
	return ValidateDefaultEvictorArgs(path, a)
}
