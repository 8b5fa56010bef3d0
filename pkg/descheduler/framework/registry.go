package framework

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PluginFactory builds a plugin of a profile from its decoded, defaulted and validated args (nil when
// the plugin registered no args type) and the profile's Handle. ctx lives as long as the descheduler
// and carries its logger (klog.FromContext): a plugin keeps it for work that outlives the factory
// (informer handlers, background goroutines) and logs through it.
type PluginFactory func(ctx context.Context, args runtime.Object, h Handle) (Plugin, error)

// Registry maps plugin names to factories. It is a value: build one with NewInTreeRegistry (package
// plugins) and add out-of-tree plugins with Register or Merge.
type Registry map[string]PluginFactory

// Register adds a factory; it is an error if the name is taken.
func (r Registry) Register(name string, factory PluginFactory) error {
	if _, ok := r[name]; ok {
		return fmt.Errorf("a plugin named %q already exists", name)
	}
	if factory == nil {
		return fmt.Errorf("plugin %q: nil factory", name)
	}
	r[name] = factory
	return nil
}

// Unregister removes a factory; it is an error if there is none by that name.
func (r Registry) Unregister(name string) error {
	if _, ok := r[name]; !ok {
		return fmt.Errorf("no plugin named %q exists", name)
	}
	delete(r, name)
	return nil
}

// Merge registers every factory of in; it stops at the first name already taken.
func (r Registry) Merge(in Registry) error {
	for name, factory := range in {
		if err := r.Register(name, factory); err != nil {
			return err
		}
	}
	return nil
}

// ArgsDefaulter is implemented by a plugin args type that has defaults (the plugin's defaults.go).
type ArgsDefaulter interface {
	SetDefaults()
}

// ArgsValidator is implemented by a plugin args type that validates itself (the plugin's
// validation.go); errors carry paths below path (profiles[i].pluginConfig[j].args).
type ArgsValidator interface {
	Validate(path *field.Path) field.ErrorList
}

// ArgsTypes maps plugin names to a prototype of their args type. The policy decoder builds a scheme
// from it on every decode, registering each prototype as kind <TypeName> of descheduler/v1alpha2,
// decodes `pluginConfig[].args` strictly into a new instance, and applies SetDefaults and Validate
// when the type implements them.
type ArgsTypes map[string]runtime.Object

// Register records the args type of a plugin; it is an error if the plugin already has one.
func (a ArgsTypes) Register(name string, prototype runtime.Object) error {
	if _, ok := a[name]; ok {
		return fmt.Errorf("plugin %q already has an args type", name)
	}
	if prototype == nil {
		return fmt.Errorf("plugin %q: nil args type", name)
	}
	if t := reflect.TypeOf(prototype); t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("plugin %q: args type %T must be a pointer to a struct", name, prototype)
	}
	a[name] = prototype
	return nil
}

// Merge records every args type of in; it stops at the first plugin that already has one.
func (a ArgsTypes) Merge(in ArgsTypes) error {
	for name, proto := range in {
		if err := a.Register(name, proto); err != nil {
			return err
		}
	}
	return nil
}

// New returns a fresh, zero instance of the plugin's args type, or nil when it has none.
func (a ArgsTypes) New(name string) runtime.Object {
	proto, ok := a[name]
	if !ok {
		return nil
	}
	return reflect.New(reflect.TypeOf(proto).Elem()).Interface().(runtime.Object)
}

// Kind is the kind the args type of a plugin is registered under: its Go type name.
func (a ArgsTypes) Kind(name string) string {
	proto, ok := a[name]
	if !ok {
		return ""
	}
	return reflect.TypeOf(proto).Elem().Name()
}

// Descriptor describes one descheduler plugin. Its args type carries the rest: SetDefaults
// (ArgsDefaulter), Validate (ArgsValidator) and, for args that follow a scheduler plugin's,
// FollowsScheduler and FollowScheduler (SchedulerFollower).
type Descriptor struct {
	// Name is the plugin's name in policies.
	Name string
	// Factory builds the plugin.
	Factory PluginFactory
	// Args is an empty value of the plugin's args type (a pointer to a struct embedding
	// metav1.TypeMeta), or nil for a plugin without args.
	Args runtime.Object
}

// Registries returns the registry and args types of descriptors; it is an error if a name is
// listed twice.
func Registries(descriptors []Descriptor) (Registry, ArgsTypes, error) {
	reg, args := Registry{}, ArgsTypes{}
	for _, d := range descriptors {
		if err := reg.Register(d.Name, d.Factory); err != nil {
			return nil, nil, err
		}
		if d.Args != nil {
			if err := args.Register(d.Name, d.Args); err != nil {
				return nil, nil, err
			}
		}
	}
	return reg, args, nil
}
