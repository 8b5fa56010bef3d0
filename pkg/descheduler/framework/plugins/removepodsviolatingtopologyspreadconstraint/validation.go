package removepodsviolatingtopologyspreadconstraint

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

var actions = []corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway}

// ValidateRemovePodsViolatingTopologySpreadConstraintArgs checks the args; paths are below path.
func ValidateRemovePodsViolatingTopologySpreadConstraintArgs(path *field.Path, a *RemovePodsViolatingTopologySpreadConstraintArgs) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, pluginutil.ValidateNamespaces(path.Child("namespaces"), a.Namespaces)...)
	errs = append(errs, pluginutil.ValidateLabelSelector(path.Child("labelSelector"), a.LabelSelector)...)
	for i, c := range a.Constraints {
		if c != corev1.DoNotSchedule && c != corev1.ScheduleAnyway {
			errs = append(errs, field.NotSupported(path.Child("constraints").Index(i), c, actions))
		}
	}
	return errs
}

// Validate implements framework.ArgsValidator.
func (a *RemovePodsViolatingTopologySpreadConstraintArgs) Validate(path *field.Path) field.ErrorList {
	return ValidateRemovePodsViolatingTopologySpreadConstraintArgs(path, a)
}
