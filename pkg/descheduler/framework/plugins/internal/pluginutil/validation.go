package pluginutil

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateNamespaces checks that at most one of include and exclude is set and that every entry is
// a valid namespace name.
func ValidateNamespaces(path *field.Path, ns *Namespaces) field.ErrorList {
	if ns == nil {
		return nil
	}
	var errs field.ErrorList
	if len(ns.Include) > 0 && len(ns.Exclude) > 0 {
		errs = append(errs, field.Invalid(path, fmt.Sprintf("include: %v, exclude: %v", ns.Include, ns.Exclude), "only one of include and exclude may be set"))
	}
	for _, l := range []struct {
		name string
		list []string
	}{{"include", ns.Include}, {"exclude", ns.Exclude}} {
		for i, n := range l.list {
			for _, msg := range validation.IsDNS1123Label(n) {
				errs = append(errs, field.Invalid(path.Child(l.name).Index(i), n, msg))
			}
		}
	}
	return errs
}

// ValidateLabelSelector checks a label selector (nil is valid: every pod matches).
func ValidateLabelSelector(path *field.Path, sel *metav1.LabelSelector) field.ErrorList {
	if sel == nil {
		return nil
	}
	return metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, path)
}

// ValidateThresholds checks that every percentage is within 0..100 and every name is a resource
// name. required makes an empty map an error.
func ValidateThresholds(path *field.Path, t ResourceThresholds, required bool) field.ErrorList {
	var errs field.ErrorList
	if required && len(t) == 0 {
		errs = append(errs, field.Required(path, "at least one resource threshold is required"))
	}
	for _, name := range SortedResourceNames(t) {
		v := t[name]
		if v < 0 || v > 100 {
			errs = append(errs, field.Invalid(path.Key(string(name)), float64(v), "must be a percentage between 0 and 100"))
		}
		errs = append(errs, validateResourceName(path.Key(string(name)), name)...)
	}
	return errs
}

func validateResourceName(path *field.Path, name corev1.ResourceName) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(string(name)) {
		errs = append(errs, field.Invalid(path, string(name), msg))
	}
	return errs
}

// ValidateResourceName checks that name is a qualified resource name.
func ValidateResourceName(path *field.Path, name corev1.ResourceName) field.ErrorList {
	return validateResourceName(path, name)
}

// SortedResourceNames returns the keys of a resource-keyed map in order.
func SortedResourceNames[V any](m map[corev1.ResourceName]V) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// PodStates are the values the upstream `states` args accept: pod phases and container waiting
// reasons (and pod status reasons for PodLifeTime).
var PodStates = []string{
	string(corev1.PodRunning), string(corev1.PodPending), string(corev1.PodSucceeded), string(corev1.PodFailed), string(corev1.PodUnknown),
	"ContainerCreating", "PodInitializing", "CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "CreateContainerConfigError",
	"CreateContainerError", "InvalidImageName", "NodeAffinity", "NodeLost", "Shutdown", "UnexpectedAdmissionError", "Evicted",
}

// ValidateStates checks each entry of a `states` arg against allowed.
func ValidateStates(path *field.Path, states []string, allowed []string) field.ErrorList {
	var errs field.ErrorList
	for i, s := range states {
		if !slices.Contains(allowed, s) {
			errs = append(errs, field.NotSupported(path.Index(i), s, allowed))
		}
	}
	return errs
}
