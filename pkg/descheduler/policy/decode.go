// Package policy reads a DeschedulerPolicy file: strict decoding of descheduler/v1alpha2, defaulting,
// decoding of every plugin's args into the args type that plugin registered, conversion to the
// internal types, and validation with field paths.
//
// Nothing here reads global state: the scheme used for a decode is built from the ArgsTypes passed in.
package policy

import (
	"fmt"
	"os"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/apis/descheduler"
	"github.com/accord-sched/accord/apis/descheduler/v1alpha2"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

// Load reads, decodes and validates the policy file at path.
func Load(path string, registry framework.Registry, args framework.ArgsTypes) (*descheduler.DeschedulerPolicy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading policy: %w", err)
	}
	p, err := Decode(data, args)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", path, err)
	}
	if errs := Validate(p, registry, args); len(errs) > 0 {
		return nil, fmt.Errorf("policy %s: %w", path, errs.ToAggregate())
	}
	return p, nil
}

// NewScheme returns a scheme holding the policy types (internal and v1alpha2, with defaults and
// conversions) and, under descheduler/v1alpha2, every args type of args.
func NewScheme(args framework.ArgsTypes) (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := descheduler.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha2.AddToScheme(scheme); err != nil {
		return nil, err
	}
	for name := range args {
		gvk := v1alpha2.SchemeGroupVersion.WithKind(args.Kind(name))
		if existing, err := scheme.New(gvk); err == nil {
			if fmt.Sprintf("%T", existing) != fmt.Sprintf("%T", args[name]) {
				return nil, fmt.Errorf("plugin %q: args kind %s is already taken by %T", name, gvk.Kind, existing)
			}
			continue
		}
		scheme.AddKnownTypeWithName(gvk, args.New(name))
	}
	return scheme, nil
}

// Decode decodes a policy strictly (an unknown field anywhere, plugin args included, is an error that
// names it), applies the defaults, decodes and defaults every plugin's args (adding default args for
// enabled plugins that have an args type and no pluginConfig) and converts the result to the internal
// types. It does not validate.
func Decode(data []byte, args framework.ArgsTypes) (*descheduler.DeschedulerPolicy, error) {
	scheme, err := NewScheme(args)
	if err != nil {
		return nil, err
	}
	strict := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme,
		json.SerializerOptions{Yaml: true, Strict: true})
	obj, gvk, err := strict.Decode(data, nil, nil)
	if err != nil {
		// The legacy strategies-based policy, which current upstream releases no longer read either.
		if gvk != nil && gvk.Group == v1alpha2.SchemeGroupVersion.Group && gvk.Version == "v1alpha1" {
			return nil, fmt.Errorf("apiVersion: %s is not supported, as in current upstream descheduler releases: "+
				"write the policy as %s (its strategies become plugins of a profile)", gvk.GroupVersion(), v1alpha2.SchemeGroupVersion)
		}
		return nil, err
	}
	versioned, ok := obj.(*v1alpha2.DeschedulerPolicy)
	if !ok {
		return nil, fmt.Errorf("expected %s DeschedulerPolicy, got %s", v1alpha2.SchemeGroupVersion, gvk)
	}
	scheme.Default(versioned)

	argsDecoder := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme,
		json.SerializerOptions{Strict: true})
	var errs field.ErrorList
	for i := range versioned.Profiles {
		prof := &versioned.Profiles[i]
		path := field.NewPath("profiles").Index(i)
		for j := range prof.PluginConfigs {
			pc := &prof.PluginConfigs[j]
			if _, ok := args[pc.Name]; !ok {
				continue // validation reports args for a plugin that takes none
			}
			if raw := string(pc.Args.Raw); raw == "" || raw == "null" {
				pc.Args = runtime.RawExtension{Object: defaultArgs(args, pc.Name)}
				continue
			}
			argsPath := path.Child("pluginConfig").Index(j).Child("args")
			want := v1alpha2.SchemeGroupVersion.WithKind(args.Kind(pc.Name))
			decoded, got, err := argsDecoder.Decode(pc.Args.Raw, &want, args.New(pc.Name))
			if err != nil {
				errs = append(errs, field.Invalid(argsPath, string(pc.Args.Raw), err.Error()))
				continue
			}
			if *got != want {
				errs = append(errs, field.Invalid(argsPath.Child("kind"), got.String(),
					fmt.Sprintf("plugin %s takes %s", pc.Name, want.Kind)))
				continue
			}
			setArgsDefaults(decoded)
			pc.Args = runtime.RawExtension{Object: decoded}
		}
		// Every enabled plugin with an args type gets its (defaulted) args.
		for _, name := range enabledPlugins(prof) {
			if _, ok := args[name]; !ok || slices.ContainsFunc(prof.PluginConfigs, func(pc v1alpha2.PluginConfig) bool { return pc.Name == name }) {
				continue
			}
			prof.PluginConfigs = append(prof.PluginConfigs, v1alpha2.PluginConfig{Name: name, Args: runtime.RawExtension{Object: defaultArgs(args, name)}})
		}
	}
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	internal := &descheduler.DeschedulerPolicy{}
	if err := scheme.Convert(versioned, internal, nil); err != nil {
		return nil, err
	}
	internal.SetGroupVersionKind(schema.GroupVersionKind{})
	return internal, nil
}

// defaultArgs returns a new, defaulted args object of a plugin.
func defaultArgs(args framework.ArgsTypes, name string) runtime.Object {
	obj := args.New(name)
	obj.GetObjectKind().SetGroupVersionKind(v1alpha2.SchemeGroupVersion.WithKind(args.Kind(name)))
	setArgsDefaults(obj)
	return obj
}

func setArgsDefaults(obj runtime.Object) {
	if d, ok := obj.(framework.ArgsDefaulter); ok {
		d.SetDefaults()
	}
}

func enabledPlugins(p *v1alpha2.DeschedulerProfile) []string {
	var out []string
	for _, set := range []v1alpha2.PluginSet{p.Plugins.Deschedule, p.Plugins.Balance, p.Plugins.Filter, p.Plugins.PreEvictionFilter, p.Plugins.Evict} {
		for _, name := range set.Enabled {
			if !slices.Contains(set.Disabled, name) && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}
