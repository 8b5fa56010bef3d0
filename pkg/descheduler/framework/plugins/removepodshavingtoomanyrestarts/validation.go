package removepodshavingtoomanyrestarts

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

var states = []string{string(corev1.PodRunning), "CrashLoopBackOff"}

// ValidateRemovePodsHavingTooManyRestartsArgs checks the args; paths are below path.
func ValidateRemovePodsHavingTooManyRestartsArgs(path *field.Path, a *RemovePodsHavingTooManyRestartsArgs) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, pluginutil.ValidateNamespaces(path.Child("namespaces"), a.Namespaces)...)
	errs = append(errs, pluginutil.ValidateLabelSelector(path.Child("labelSelector"), a.LabelSelector)...)
	if a.PodRestartThreshold < 1 {
		errs = append(errs, field.Invalid(path.Child("podRestartThreshold"), a.PodRestartThreshold, "must be at least 1"))
	}
	errs = append(errs, pluginutil.ValidateStates(path.Child("states"), a.States, states)...)
	return errs
}

// Validate implements framework.ArgsValidator.
func (a *RemovePodsHavingTooManyRestartsArgs) Validate(path *field.Path) field.ErrorList {
	return ValidateRemovePodsHavingTooManyRestartsArgs(path, a)
}
