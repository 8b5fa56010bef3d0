package nodecrdresourcefit

import (
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configvalidation "github.com/accord-sched/accord/apis/config/validation"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// ValidateNodeCRDResourceFitArgs checks the args; paths are below path.
func ValidateNodeCRDResourceFitArgs(path *field.Path, a *NodeCRDResourceFitArgs) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, configvalidation.ValidateMissingCRPolicy(path.Child("missingCRPolicy"), a.MissingCRPolicy)...)
	errs = append(errs, pluginutil.ValidateNamespaces(path.Child("namespaces"), a.Namespaces)...)
	errs = append(errs, pluginutil.ValidateLabelSelector(path.Child("labelSelector"), a.LabelSelector)...)
	for i, n := range a.SchedulerNames {
		for _, msg := range validation.IsDNS1123Subdomain(n) {
			errs = append(errs, field.Invalid(path.Child("schedulerNames").Index(i), n, msg))
		}
	}
	return errs
}

// Validate implements framework.ArgsValidator.
func (a *NodeCRDResourceFitArgs) Validate(path *field.Path) field.ErrorList {
	return ValidateNodeCRDResourceFitArgs(path, a)
}
