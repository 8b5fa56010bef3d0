package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/apis/descheduler"
	"github.com/accord-sched/accord/apis/descheduler/v1alpha2"
	"github.com/accord-sched/accord/pkg/descheduler/evictions"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

// ExtensionPoint names an extension point as it appears in a policy (`plugins.<point>`).
type ExtensionPoint string

// The extension points of a profile.
const (
	Deschedule        ExtensionPoint = "deschedule"
	Balance           ExtensionPoint = "balance"
	Filter            ExtensionPoint = "filter"
	PreEvictionFilter ExtensionPoint = "preEvictionFilter"
	Evict             ExtensionPoint = "evict"
)

// ExtensionPoints lists the extension points in the order they appear in Plugins.
var ExtensionPoints = [...]ExtensionPoint{Deschedule, Balance, Filter, PreEvictionFilter, Evict}

// PluginSet returns the set of a profile for an extension point.
func PluginSet(p *descheduler.Plugins, point ExtensionPoint) descheduler.PluginSet {
	switch point {
	case Deschedule:
		return p.Deschedule
	case Balance:
		return p.Balance
	case Filter:
		return p.Filter
	case PreEvictionFilter:
		return p.PreEvictionFilter
	case Evict:
		return p.Evict
	}
	return descheduler.PluginSet{}
}

// Enabled returns the plugins effectively enabled at an extension point: the enabled list, in order,
// without the names the disabled list holds.
func Enabled(p *descheduler.Plugins, point ExtensionPoint) []string {
	set := PluginSet(p, point)
	out := make([]string, 0, len(set.Enabled))
	for _, name := range set.Enabled {
		if !slices.Contains(set.Disabled, name) && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// EnabledPath returns the path of the i-th entry of an extension point's enabled list.
func EnabledPath(profile int, point ExtensionPoint, name string, p *descheduler.Plugins) *field.Path {
	base := field.NewPath("profiles").Index(profile).Child("plugins", string(point), "enabled")
	return base.Index(slices.Index(PluginSet(p, point).Enabled, name))
}

// Validate checks a decoded policy against the registry: profile names (present, unique), limits
// (not negative), selectors, plugin names at every extension point (registered, not repeated, at most
// one evict plugin), plugin args (also of plugins the profile does not enable, as upstream: of the registered type, and valid by the
// plugin's own validator). Whether a plugin implements the extension points it is enabled at is known
// only once it is built; the runtime reports that with the same paths.
func Validate(p *descheduler.DeschedulerPolicy, registry framework.Registry, args framework.ArgsTypes) field.ErrorList {
	var errs field.ErrorList
	for _, l := range []struct {
		name string
		v    *int32
	}{
		{"maxNoOfPodsToEvictPerNode", p.MaxNoOfPodsToEvictPerNode},
		{"maxNoOfPodsToEvictPerNamespace", p.MaxNoOfPodsToEvictPerNamespace},
		{"maxNoOfPodsToEvictTotal", p.MaxNoOfPodsToEvictTotal},
	} {
		if l.v != nil && *l.v < 0 {
			errs = append(errs, field.Invalid(field.NewPath(l.name), *l.v, "must not be negative"))
		}
	}
	for _, l := range []struct {
		name string
		v    *intstr.IntOrString
	}{
		{"maxMigratingPerWorkload", p.MaxMigratingPerWorkload},
		{"maxUnavailablePerWorkload", p.MaxUnavailablePerWorkload},
	} {
		errs = append(errs, validateWorkloadLimit(field.NewPath(l.name), l.v)...)
	}
	if p.GracePeriodSeconds != nil && *p.GracePeriodSeconds < 0 {
		errs = append(errs, field.Invalid(field.NewPath("gracePeriodSeconds"), *p.GracePeriodSeconds, "must not be negative"))
	}
	errs = append(errs, validateSelector(field.NewPath("nodeSelector"), p.NodeSelector)...)
	errs = append(errs, validateMetricsProviders(p)...)
	if len(p.Profiles) == 0 {
		errs = append(errs, field.Required(field.NewPath("profiles"), "at least one profile is needed"))
	}
	names := sets.New[string]()
	for i := range p.Profiles {
		prof := &p.Profiles[i]
		path := field.NewPath("profiles").Index(i)
		switch {
		case prof.Name == "":
			errs = append(errs, field.Required(path.Child("name"), ""))
		case names.Has(prof.Name):
			errs = append(errs, field.Duplicate(path.Child("name"), prof.Name))
		}
		names.Insert(prof.Name)
		errs = append(errs, validateSelector(path.Child("nodeSelector"), prof.NodeSelector)...)
		_, werrs := evictions.ParseWindows(path.Child("evictionWindows"), prof.EvictionWindows)
		errs = append(errs, werrs...)
		switch prof.EvictionMode {
		case "", descheduler.EvictionModeEvict, descheduler.EvictionModeSoft:
		default:
			errs = append(errs, field.NotSupported(path.Child("evictionMode"), prof.EvictionMode,
				[]descheduler.EvictionMode{descheduler.EvictionModeEvict, descheduler.EvictionModeSoft}))
		}
		if prof.EvictionMode == descheduler.EvictionModeSoft {
			// Soft annotates the pod instead of calling the evict plugin: another evict plugin
			// (ReservationFirst, an out-of-tree one) would be configured and never run.
			for j, name := range prof.Plugins.Evict.Enabled {
				if name != v1alpha2.DefaultEvictName {
					errs = append(errs, field.Invalid(path.Child("plugins", "evict", "enabled").Index(j), name,
						"evictionMode Soft annotates pods instead of calling an evict plugin; use evictionMode Evict with this plugin"))
				}
			}
		}
		errs = append(errs, validatePodMigration(i, prof)...)
		errs = append(errs, validateProfile(path, prof, registry, args)...)
	}
	return errs
}

// Names of the in-tree plugins validatePodMigration pairs (policy may not import the plugins).
const (
	podMigrationName     = "PodMigration"
	reservationFirstName = "ReservationFirst"
)

// validatePodMigration: the PodMigration controller moves pods reservation-first through its
// profile's evict plugin, which must therefore be ReservationFirst.
func validatePodMigration(i int, prof *descheduler.DeschedulerProfile) field.ErrorList {
	var errs field.ErrorList
	if slices.Contains(Enabled(&prof.Plugins, Evict), reservationFirstName) {
		return nil
	}
	for _, point := range []ExtensionPoint{Deschedule, Balance} {
		for _, name := range Enabled(&prof.Plugins, point) {
			if name == podMigrationName {
				errs = append(errs, field.Invalid(EnabledPath(i, point, name, &prof.Plugins), name,
					"PodMigration moves pods reservation-first: enable ReservationFirst at plugins.evict.enabled of this profile"))
			}
		}
	}
	return errs
}

// validateWorkloadLimit accepts a positive integer or a percentage in (0%, 100%].
func validateWorkloadLimit(path *field.Path, v *intstr.IntOrString) field.ErrorList {
	if v == nil {
		return nil
	}
	if v.Type == intstr.Int {
		if v.IntVal < 1 {
			return field.ErrorList{field.Invalid(path, v.IntVal, "must be at least 1 (or a percentage such as \"10%\")")}
		}
		return nil
	}
	pct, ok := strings.CutSuffix(v.StrVal, "%")
	n, err := strconv.Atoi(pct)
	if !ok || err != nil || n < 1 || n > 100 {
		return field.ErrorList{field.Invalid(path, v.StrVal, "must be an integer or a percentage from 1% to 100%")}
	}
	return nil
}

func validateSelector(path *field.Path, sel *string) field.ErrorList {
	if sel == nil {
		return nil
	}
	if _, err := labels.Parse(*sel); err != nil {
		return field.ErrorList{field.Invalid(path, *sel, err.Error())}
	}
	return nil
}

func validateProfile(path *field.Path, prof *descheduler.DeschedulerProfile, registry framework.Registry, args framework.ArgsTypes) field.ErrorList {
	var errs field.ErrorList
	for _, point := range ExtensionPoints {
		set := PluginSet(&prof.Plugins, point)
		pointPath := path.Child("plugins", string(point))
		seen := sets.New[string]()
		for j, name := range set.Enabled {
			p := pointPath.Child("enabled").Index(j)
			switch {
			case name == "":
				errs = append(errs, field.Required(p, "plugin name"))
			case registry[name] == nil:
				errs = append(errs, field.NotFound(p, name))
			case seen.Has(name):
				errs = append(errs, field.Duplicate(p, name))
			}
			seen.Insert(name)
		}
		for j, name := range set.Disabled {
			if name != "*" && registry[name] == nil {
				errs = append(errs, field.NotFound(pointPath.Child("disabled").Index(j), name))
			}
		}
		on := Enabled(&prof.Plugins, point)
		if point == Evict && len(on) > 1 {
			errs = append(errs, field.TooMany(pointPath.Child("enabled"), len(on), 1))
		}
	}
	configured := sets.New[string]()
	for j := range prof.PluginConfigs {
		pc := &prof.PluginConfigs[j]
		p := path.Child("pluginConfig").Index(j)
		switch {
		case pc.Name == "":
			errs = append(errs, field.Required(p.Child("name"), ""))
			continue
		case registry[pc.Name] == nil:
			errs = append(errs, field.NotFound(p.Child("name"), pc.Name))
			continue
		case configured.Has(pc.Name):
			errs = append(errs, field.Duplicate(p.Child("name"), pc.Name))
			continue
		}
		// Args of a plugin the profile does not enable are accepted, as upstream accepts them (a
		// policy may keep a plugin's settings while it is switched off), and validated all the same.
		configured.Insert(pc.Name)
		errs = append(errs, validateArgs(p.Child("args"), pc, args)...)
	}
	return errs
}

func validateArgs(path *field.Path, pc *descheduler.PluginConfig, args framework.ArgsTypes) field.ErrorList {
	proto, ok := args[pc.Name]
	if !ok {
		if pc.Args != nil && !isEmptyUnknown(pc.Args) {
			return field.ErrorList{field.Invalid(path, "", fmt.Sprintf("plugin %s takes no args", pc.Name))}
		}
		return nil
	}
	if pc.Args == nil {
		return field.ErrorList{field.Required(path, fmt.Sprintf("plugin %s needs %s", pc.Name, args.Kind(pc.Name)))}
	}
	if fmt.Sprintf("%T", pc.Args) != fmt.Sprintf("%T", proto) {
		return field.ErrorList{field.Invalid(path, fmt.Sprintf("%T", pc.Args), fmt.Sprintf("plugin %s takes %T", pc.Name, proto))}
	}
	if v, ok := pc.Args.(framework.ArgsValidator); ok {
		return v.Validate(path)
	}
	return nil
}

func isEmptyUnknown(obj runtime.Object) bool {
	u, ok := obj.(*runtime.Unknown)
	return ok && (len(u.Raw) == 0 || string(u.Raw) == "null" || string(u.Raw) == "{}")
}
