package framework

import (
	"encoding/json"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/apis/config"
)

// SchedulerFollower is implemented by a plugin args type some of whose fields follow a scheduler
// plugin's args (the same rule, enforced by both binaries). With --scheduler-config-file the
// descheduler calls FollowScheduler on every pluginConfig whose args implement it, after decoding
// and defaulting and before validation: a field the policy leaves out takes the scheduler's value,
// a field set to another value is an error naming both paths (Follow.Contradiction).
type SchedulerFollower interface {
	runtime.Object
	// FollowsScheduler names the scheduler plugins (KubeSchedulerConfiguration plugin names) whose
	// args these args follow; Follow.Sources offers only these.
	FollowsScheduler() []string
	// FollowScheduler fills in and checks the args against the scheduler's.
	FollowScheduler(f *Follow) field.ErrorList
}

// SchedulerArgs is one scheduler profile's args of a scheduler plugin.
type SchedulerArgs struct {
	// SchedulerName is the profile's schedulerName.
	SchedulerName string
	// Args are the plugin's internal, defaulted args (e.g. *config.LoadAwareArgs).
	Args any
	// File is the scheduler configuration file.
	File string
	// Path is the args' field path in File, or the profile's path when Defaulted.
	Path *field.Path
	// Defaulted says the profile has no pluginConfig for the plugin (its defaults apply).
	Defaulted bool
}

// FieldPath names field child of the args for a message: file and path.
func (s SchedulerArgs) FieldPath(child string) string {
	if s.Defaulted {
		return fmt.Sprintf("%s %s (no pluginConfig: the scheduler plugin's default %s)", s.File, s.Path, child)
	}
	return fmt.Sprintf("%s %s", s.File, s.Path.Child(child))
}

// Follow is what FollowScheduler is given for one pluginConfig of a policy profile.
type Follow struct {
	// Path is the args' field path in the policy (profiles[i].pluginConfig[j].args).
	Path *field.Path
	// Given holds the keys the policy file itself sets in these args (before defaulting).
	Given map[string]bool
	// Peers are the args of the profile's other plugins that are enabled at some extension point.
	Peers map[string]runtime.Object
	// Scheduler holds, per followed scheduler plugin, the args of every scheduler profile that
	// enables it, in profile order.
	Scheduler map[string][]SchedulerArgs
}

// Sources returns the args of plugin of the scheduler profiles that enable it; when schedulerNames
// is not empty, only of the profiles of those names.
func (f *Follow) Sources(plugin string, schedulerNames []string) []SchedulerArgs {
	var out []SchedulerArgs
	for _, s := range f.Scheduler[plugin] {
		if len(schedulerNames) == 0 || slices.Contains(schedulerNames, s.SchedulerName) {
			out = append(out, s)
		}
	}
	return out
}

// Contradiction is the error for a policy field at child (below Path) whose value v differs from
// the scheduler's value want at s's field schedChild. A field the policy does not set differs only
// when two scheduler profiles disagree with each other.
func (f *Follow) Contradiction(child string, v any, s SchedulerArgs, schedChild string, want any) *field.Error {
	var msg string
	if f.Given[child] {
		msg = fmt.Sprintf("contradicts the scheduler configuration: %s is %s (leave this field out to use the scheduler's value)", s.FieldPath(schedChild), show(want))
	} else {
		msg = fmt.Sprintf("the scheduler profiles this plugin follows disagree: %s is %s; make them agree, or limit the plugin to one of them", s.FieldPath(schedChild), show(want))
	}
	return field.Invalid(f.Path.Child(child), v, msg)
}

// WrongArgs is the error for scheduler args of an unexpected type.
func (f *Follow) WrongArgs(s SchedulerArgs, schedChild string) *field.Error {
	return field.InternalError(f.Path, fmt.Errorf("%s: args of type %T", s.FieldPath(schedChild), s.Args))
}

// show prints a value as it reads in a configuration file (maps as JSON objects).
func show(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

// FollowMissingCRPolicy fills in or checks a missingCRPolicy arg (at Path.missingCRPolicy) against
// the scheduler's NodeCRDResourceFit of the profiles named schedulerNames (all when empty).
func FollowMissingCRPolicy(f *Follow, v *config.MissingCRPolicy, schedulerNames []string) field.ErrorList {
	const child = "missingCRPolicy"
	var errs field.ErrorList
	for k, s := range f.Sources(SchedulerNodeCRDResourceFit, schedulerNames) {
		a, ok := s.Args.(*config.NodeCRDResourceFitArgs)
		if !ok {
			return field.ErrorList{f.WrongArgs(s, child)}
		}
		switch {
		case !f.Given[child] && k == 0:
			*v = a.MissingCRPolicy
		case *v != a.MissingCRPolicy:
			errs = append(errs, f.Contradiction(child, *v, s, child, a.MissingCRPolicy))
		}
	}
	return errs
}

// The scheduler plugins the in-tree descheduler plugins follow.
const (
	SchedulerNodeCRDResourceFit = "NodeCRDResourceFit"
	SchedulerLoadAware          = "LoadAware"
)
