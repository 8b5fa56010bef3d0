package framework

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/pkg/constraints"
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
	// Args are the plugin's internal, defaulted args (apis/config's, or whatever the scheduler's
	// scheme decodes an out-of-tree plugin's args to).
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

// Following and FollowedField are constraints' declaration of how a descheduler plugin's args follow
// a scheduler plugin's (see FollowShared), here for plugins outside this module.
type (
	Following     = constraints.Following
	FollowedField = constraints.FollowedField
)

// FollowDecoded is FollowShared for a scheduler plugin whose args the scheduler's scheme does not
// know (an out-of-tree plugin: kube-scheduler hands them over as *runtime.Unknown, or nil when the
// profile has no pluginConfig for it). decode turns each profile's args into the plugin's typed,
// defaulted args (strictly: the scheduler plugin must decode them alike), which FollowShared then
// compares field by field; an error decoding them names the scheduler's field path.
func FollowDecoded(f *Follow, args any, following Following, schedulerNames []string, decode func(runtime.Object) (any, error)) field.ErrorList {
	sources := f.Sources(following.Scheduler, schedulerNames)
	typed := make([]SchedulerArgs, 0, len(sources))
	for _, s := range sources {
		obj, _ := s.Args.(runtime.Object)
		if s.Args != nil && obj == nil {
			return field.ErrorList{f.WrongArgs(s, following.Fields[0].Scheduler)}
		}
		decoded, err := decode(obj)
		if err != nil {
			return field.ErrorList{&field.Error{Type: field.ErrorTypeInvalid, Field: f.Path.String(), BadValue: field.OmitValueType{},
				Detail: fmt.Sprintf("the scheduler plugin %s's args, %s %s, do not decode: %v", following.Scheduler, s.File, s.Path, err)}}
		}
		s.Args = decoded
		typed = append(typed, s)
	}
	decoded := *f
	decoded.Scheduler = map[string][]SchedulerArgs{following.Scheduler: typed}
	return FollowShared(&decoded, args, following, nil)
}

// FollowShared fills in and checks args, a descheduler plugin's args (a pointer to a struct),
// against the scheduler's args of following.Scheduler in the profiles named schedulerNames (all
// when empty), as following declares: per profile in order, per field in order, a field the
// policy leaves out takes the first profile's value; one the policy sets (or took from an earlier
// profile) that differs is f.Contradiction naming both paths. It is the one implementation of
// following: a descheduler plugin's FollowScheduler names its Following and calls it.
//
// Fields are found by their JSON names (through inline structs; in the scheduler's internal args,
// which have no JSON names, by the exported Go name); their values are maps, pointers or plain
// values of the same type on both sides.
func FollowShared(f *Follow, args any, following constraints.Following, schedulerNames []string) field.ErrorList {
	own := reflect.ValueOf(args)
	if own.Kind() != reflect.Pointer || own.Elem().Kind() != reflect.Struct {
		return field.ErrorList{field.InternalError(f.Path, fmt.Errorf("args of type %T follow no scheduler args", args))}
	}
	var errs field.ErrorList
	for k, s := range f.Sources(following.Scheduler, schedulerNames) {
		sched := reflect.ValueOf(s.Args)
		if sched.Kind() != reflect.Pointer || sched.IsNil() || sched.Elem().Kind() != reflect.Struct {
			return field.ErrorList{f.WrongArgs(s, following.Fields[0].Scheduler)}
		}
		for _, fld := range following.Fields {
			if fld.Unless != "" {
				unless, ok := fieldByName(own.Elem(), fld.Unless)
				if !ok || unless.Kind() != reflect.Bool {
					return field.ErrorList{field.InternalError(f.Path, fmt.Errorf("args of type %T have no boolean %s", args, fld.Unless))}
				}
				if unless.Bool() {
					continue
				}
			}
			mine, ok := fieldByName(own.Elem(), fld.Own())
			if !ok {
				return field.ErrorList{field.InternalError(f.Path, fmt.Errorf("args of type %T have no field %s", args, fld.Own()))}
			}
			want, ok := fieldByName(sched.Elem(), fld.Scheduler)
			if !ok || mine.Type() != want.Type() {
				return field.ErrorList{f.WrongArgs(s, fld.Scheduler)}
			}
			switch {
			case !f.Given[fld.Own()] && k == 0:
				mine.Set(clone(want))
				if fld.Caps != "" && !f.Given[fld.Caps] {
					if err := capDefaults(own, fld.Caps, mine); err != nil {
						return append(errs, field.InternalError(f.Path.Child(fld.Caps), err))
					}
				}
			case fld.MayDiffer:
			case !same(mine, want, fld.PositiveEntries):
				errs = append(errs, f.Contradiction(fld.Own(), shown(mine), s, fld.Scheduler, shown(want)))
			}
		}
	}
	return errs
}

// fieldByName finds the field of struct v whose JSON name is name, looking into inline
// (anonymous) struct fields; a field without a JSON name matches by its Go name with the first
// letter upper-cased.
func fieldByName(v reflect.Value, name string) (reflect.Value, bool) {
	goName := strings.ToUpper(name[:1]) + name[1:]
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if sf.Anonymous && tag == "" && sf.Type.Kind() == reflect.Struct {
			if fv, ok := fieldByName(v.Field(i), name); ok {
				return fv, true
			}
			continue
		}
		if sf.IsExported() && (tag == name || (tag == "" && sf.Name == goName)) {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// clone is a copy of v that shares no memory with it (maps and pointers copied one level, which
// is all the followed fields hold); a nil map or pointer stays nil.
func clone(v reflect.Value) reflect.Value {
	switch {
	case v.Kind() == reflect.Map && !v.IsNil():
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			out.SetMapIndex(it.Key(), it.Value())
		}
		return out
	case v.Kind() == reflect.Pointer && !v.IsNil():
		out := reflect.New(v.Type().Elem())
		out.Elem().Set(v.Elem())
		return out
	}
	return v
}

// same reports whether two field values are alike: maps by their entries (nil and {} alike; with
// positiveOnly, by their positive entries: a zero entry, like a missing one, means nothing),
// pointers by what they point to (nil only like nil), others by equality.
func same(a, b reflect.Value, positiveOnly bool) bool {
	switch a.Kind() {
	case reflect.Map:
		entries := func(m reflect.Value) map[any]any {
			out := map[any]any{}
			for it := m.MapRange(); it.Next(); {
				if !positiveOnly || it.Value().Int() > 0 {
					out[it.Key().Interface()] = it.Value().Interface()
				}
			}
			return out
		}
		return reflect.DeepEqual(entries(a), entries(b))
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() && b.IsNil()
		}
		return a.Elem().Interface() == b.Elem().Interface()
	}
	return a.Interface() == b.Interface()
}

// shown is a field value as a message shows it: what a pointer points to, or nil (null).
func shown(v reflect.Value) any {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		return v.Elem().Interface()
	}
	return v.Interface()
}

// capDefaults sets field name of args (a resource-keyed map) to its default (the value
// SetDefaults gives it in fresh args) for the resources of capBy, each capped at capBy's value;
// resources without a default are left out.
func capDefaults(args reflect.Value, name string, capBy reflect.Value) error {
	fresh := reflect.New(args.Type().Elem())
	d, ok := fresh.Interface().(ArgsDefaulter)
	if !ok {
		return fmt.Errorf("args of type %s have no defaults to cap", args.Type())
	}
	d.SetDefaults()
	def, ok := fieldByName(fresh.Elem(), name)
	target, okTarget := fieldByName(args.Elem(), name)
	if !ok || !okTarget || def.Kind() != reflect.Map || capBy.Kind() != reflect.Map || def.Type() != capBy.Type() {
		return fmt.Errorf("args of type %s: %s cannot be capped", args.Type(), name)
	}
	out := reflect.MakeMap(def.Type())
	for it := capBy.MapRange(); it.Next(); {
		if l := def.MapIndex(it.Key()); l.IsValid() {
			out.SetMapIndex(it.Key(), reflect.ValueOf(min(l.Int(), it.Value().Int())).Convert(def.Type().Elem()))
		}
	}
	target.Set(out)
	return nil
}
