package podlifetime

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// terminatedReasons are the container terminated reasons PodLifeTime's states accept besides
// pluginutil.PodStates, as upstream.
func terminatedReasons() []string {
	return []string{"OOMKilled", "Error", "Completed", "DeadlineExceeded", "Evicted", "ContainerCannotRun", "StartError"}
}

// States are the values PodLifeTime's states accept.
func States() []string {
	out := slices.Clone(pluginutil.PodStates)
	for _, r := range terminatedReasons() {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// ValidatePodLifeTimeArgs checks the args; paths are below path.
func ValidatePodLifeTimeArgs(path *field.Path, a *PodLifeTimeArgs) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, pluginutil.ValidateNamespaces(path.Child("namespaces"), a.Namespaces)...)
	errs = append(errs, pluginutil.ValidateLabelSelector(path.Child("labelSelector"), a.LabelSelector)...)
	if k := a.OwnerKinds; k != nil && len(k.Include) > 0 && len(k.Exclude) > 0 {
		errs = append(errs, field.Forbidden(path.Child("ownerKinds"), "set include or exclude, not both"))
	}
	if a.MaxPodLifeTimeSeconds == nil && len(a.States) == 0 && len(a.Conditions) == 0 && len(a.ExitCodes) == 0 {
		errs = append(errs, field.Required(path, "at least one of maxPodLifeTimeSeconds, states, conditions or exitCodes"))
	}
	errs = append(errs, pluginutil.ValidateStates(path.Child("states"), a.States, States())...)
	for i, c := range a.Conditions {
		if c.Type == "" && c.Status == "" && c.Reason == "" && c.MinTimeSinceLastTransitionSeconds == nil {
			errs = append(errs, field.Required(path.Child("conditions").Index(i), "at least one of type, status, reason or minTimeSinceLastTransitionSeconds"))
		}
	}
	return errs
}

// Validate implements framework.ArgsValidator.
func (a *PodLifeTimeArgs) Validate(path *field.Path) field.ErrorList {
	return ValidatePodLifeTimeArgs(path, a)
}
