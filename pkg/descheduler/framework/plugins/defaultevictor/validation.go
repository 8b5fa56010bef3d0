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
	extraProtections   = []PodProtection{PodsWithoutPDB, PodsWithPVC, PodsWithResourceClaims}
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
	if a.NamespaceLabelSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(a.NamespaceLabelSelector, metav1validation.LabelSelectorValidationOptions{}, path.Child("namespaceLabelSelector"))...)
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
	pp := path.Child("podProtections")
	for _, l := range []struct {
		name string
		list []PodProtection
	}{{"defaultDisabled", a.PodProtections.DefaultDisabled}, {"extraEnabled", a.PodProtections.ExtraEnabled}} {
		seen := map[PodProtection]bool{}
		for i, p := range l.list {
			if seen[p] {
				errs = append(errs, field.Duplicate(pp.Child(l.name).Index(i), p))
			}
			seen[p] = true
		}
	}
	// As upstream: the deprecated booleans and the protection lists do not mix.
	deprecated := map[string]bool{"evictLocalStoragePods": a.EvictLocalStoragePods, "evictDaemonSetPods": a.EvictDaemonSetPods,
		"evictSystemCriticalPods": a.EvictSystemCriticalPods, "ignorePvcPods": a.IgnorePvcPods,
		"evictFailedBarePods": a.EvictFailedBarePods, "ignorePodsWithoutPDB": a.IgnorePodsWithoutPDB}
	if len(a.PodProtections.DefaultDisabled) > 0 || len(a.PodProtections.ExtraEnabled) > 0 {
		for _, name := range []string{"evictLocalStoragePods", "evictDaemonSetPods", "evictSystemCriticalPods", "ignorePvcPods", "evictFailedBarePods", "ignorePodsWithoutPDB"} {
			if deprecated[name] {
				errs = append(errs, field.Forbidden(path.Child(name), "deprecated; use podProtections instead, not both"))
			}
		}
	}
	if c := a.PodProtections.Config; c != nil && c.PodsWithPVC != nil {
		cp := pp.Child("config", "PodsWithPVC")
		if slices.Contains(a.PodProtections.DefaultDisabled, PodsWithPVC) {
			errs = append(errs, field.Invalid(cp, "", "PodsWithPVC is in podProtections.defaultDisabled: its settings would have no effect"))
		}
		seen := map[string]bool{}
		for i, sc := range c.PodsWithPVC.ProtectedStorageClasses {
			ip := cp.Child("protectedStorageClasses").Index(i).Child("name")
			switch {
			case sc.Name == "":
				errs = append(errs, field.Required(ip, "a storage class name"))
			case seen[sc.Name]:
				errs = append(errs, field.Duplicate(ip, sc.Name))
			}
			seen[sc.Name] = true
		}
	}
	return errs
}

// Validate implements framework.ArgsValidator.
func (a *DefaultEvictorArgs) Validate(path *field.Path) field.ErrorList {
	return ValidateDefaultEvictorArgs(path, a)
}
