package schedulersimulation

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/pkg/descheduler/simulator"
)

// ValidateSchedulerSimulationArgs checks the args; paths are below path. The scheduler
// configuration file is loaded and validated as kube-scheduler would, and the profile must be one
// of its profiles.
func ValidateSchedulerSimulationArgs(path *field.Path, a *SchedulerSimulationArgs) field.ErrorList {
	var errs field.ErrorList
	positive := func(name string, d interface{ Seconds() float64 }, set bool) {
		if set && d.Seconds() <= 0 {
			errs = append(errs, field.Invalid(path.Child(name), d, "must be positive"))
		}
	}
	if a.FlapWindow != nil {
		positive("flapWindow", a.FlapWindow.Duration, true)
	}
	if a.BackoffBase != nil {
		positive("backoffBase", a.BackoffBase.Duration, true)
	}
	if a.BackoffMax != nil {
		positive("backoffMax", a.BackoffMax.Duration, true)
	}
	if a.BackoffBase != nil && a.BackoffMax != nil && a.BackoffMax.Duration < a.BackoffBase.Duration {
		errs = append(errs, field.Invalid(path.Child("backoffMax"), a.BackoffMax.Duration.String(), "must not be less than backoffBase"))
	}
	cfg, err := simulator.LoadConfig(a.SchedulerConfigFile)
	if err != nil {
		errs = append(errs, field.Invalid(path.Child("schedulerConfigFile"), a.SchedulerConfigFile, err.Error()))
		return errs
	}
	if a.Profile != "" && a.Profile != simulator.DefaultSchedulerName {
		found := false
		for _, p := range cfg.Profiles {
			found = found || p.SchedulerName == a.Profile
		}
		if !found {
			errs = append(errs, field.NotFound(path.Child("profile"), a.Profile))
		}
	}
	return errs
}

// Validate implements framework.ArgsValidator.
func (a *SchedulerSimulationArgs) Validate(path *field.Path) field.ErrorList {
	return ValidateSchedulerSimulationArgs(path, a)
}
