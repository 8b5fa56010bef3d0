package runner

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"sigs.k8s.io/yaml"

	"github.com/accord-sched/accord/apis/config"
	accordscheme "github.com/accord-sched/accord/apis/config/scheme"
	"github.com/accord-sched/accord/apis/descheduler"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/defaultevictor"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/lownodeload"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/nodecrdresourcefit"
	"github.com/accord-sched/accord/pkg/descheduler/policy"
	"github.com/accord-sched/accord/pkg/descheduler/simulator"
)

// The scheduler plugins whose args the descheduler's plugins must agree with.
const (
	schedNodeCRDResourceFit = "NodeCRDResourceFit"
	schedLoadAware          = "LoadAware"
)

// The policy args that follow the scheduler configuration given with --scheduler-config-file:
//
//	NodeCRDResourceFit missingCRPolicy      = the scheduler's NodeCRDResourceFit missingCRPolicy
//	DefaultEvictor missingCRPolicy          = the scheduler's NodeCRDResourceFit missingCRPolicy
//	LowNodeLoad highThresholds              = the scheduler's LoadAware usageThresholds
//	LowNodeLoad nodeMetricExpirationSeconds = the scheduler's LoadAware nodeMetricExpirationSeconds
//	LowNodeLoad estimatedScalingFactors     = the scheduler's LoadAware estimatedScalingFactors
//	LowNodeLoad estimatedSecondsAfterPodScheduled = the scheduler's LoadAware estimatedSecondsAfterPodScheduled
//
// A policy that leaves one out gets the scheduler's value; a policy that sets one to another value
// is rejected with both field paths. LowNodeLoad's resourceWeights, when left out, are LoadAware's
// too (they only order nodes and pods, so a different explicit value is allowed), and its
// lowThresholds, when left out with highThresholds, are the plugin's defaults capped at the
// scheduler's thresholds. With useDeviationThresholds the thresholds are relative to the mean and
// have no scheduler counterpart: they are neither filled in nor checked.

// schedArgs is one scheduler profile's args of one plugin, with where they come from.
type schedArgs struct {
	// path is the args' field path in the scheduler configuration, or the profile's path when the
	// plugin runs with its default args.
	path *field.Path
	// defaulted says the profile has no pluginConfig for the plugin (its defaults apply).
	defaulted bool
	args      any
}

func (s schedArgs) fieldPath(file, child string) string {
	if s.defaulted {
		return fmt.Sprintf("%s %s (no pluginConfig: the scheduler plugin's default %s)", file, s.path, child)
	}
	return fmt.Sprintf("%s %s", file, s.path.Child(child))
}

// schedulerTruth is what a KubeSchedulerConfiguration says about the shared constraints.
type schedulerTruth struct {
	file string
	cfg  *schedconfig.KubeSchedulerConfiguration
}

// loadSchedulerTruth reads the scheduler configuration with simulator.LoadConfig, exactly as
// accord-scheduler's --config reads it.
func loadSchedulerTruth(file string) (*schedulerTruth, error) {
	cfg, err := simulator.LoadConfig(file)
	if err != nil {
		return nil, err
	}
	return &schedulerTruth{file: file, cfg: cfg}, nil
}

// argsOf returns, for every profile that enables plugin (and, when schedulerNames is not empty, is
// one of them), that profile's args of the plugin.
func (t *schedulerTruth) argsOf(plugin string, schedulerNames []string) ([]schedArgs, error) {
	var out []schedArgs
	for i := range t.cfg.Profiles {
		prof := &t.cfg.Profiles[i]
		if len(schedulerNames) > 0 && !slices.Contains(schedulerNames, prof.SchedulerName) {
			continue
		}
		if !pluginEnabled(prof.Plugins, plugin) {
			continue
		}
		path := field.NewPath("profiles").Index(i)
		found := false
		for j := range prof.PluginConfig {
			if prof.PluginConfig[j].Name == plugin {
				out = append(out, schedArgs{path: path.Child("pluginConfig").Index(j).Child("args"), args: prof.PluginConfig[j].Args})
				found = true
			}
		}
		if !found {
			def, err := defaultSchedulerArgs(plugin)
			if err != nil {
				return nil, err
			}
			out = append(out, schedArgs{path: path, defaulted: true, args: def})
		}
	}
	return out, nil
}

// pluginEnabled says whether a scheduler profile runs plugin at any extension point.
func pluginEnabled(p *schedconfig.Plugins, plugin string) bool {
	if p == nil {
		return false
	}
	for _, set := range []schedconfig.PluginSet{p.MultiPoint, p.PreEnqueue, p.QueueSort, p.PreFilter, p.Filter, p.PostFilter,
		p.PreScore, p.Score, p.Reserve, p.Permit, p.PreBind, p.Bind, p.PostBind} {
		disabled := slices.ContainsFunc(set.Disabled, func(d schedconfig.Plugin) bool { return d.Name == plugin || d.Name == "*" })
		if !disabled && slices.ContainsFunc(set.Enabled, func(e schedconfig.Plugin) bool { return e.Name == plugin }) {
			return true
		}
	}
	return false
}

// defaultSchedulerArgs returns the internal args a scheduler plugin runs with when its profile has
// no pluginConfig for it: the v1 defaults, through the scheduler's own scheme.
func defaultSchedulerArgs(plugin string) (any, error) {
	doc := "apiVersion: kubescheduler.config.k8s.io/v1\nkind: " + plugin + "Args\n"
	obj, _, err := accordscheme.Codecs.UniversalDecoder().Decode([]byte(doc), nil, nil)
	if err != nil {
		return nil, fmt.Errorf("default args of the scheduler plugin %s: %w", plugin, err)
	}
	return obj, nil
}

// explicitArgs returns, per profile index and plugin name, the keys the policy file itself sets in
// that plugin's args (before any defaulting).
func explicitArgs(data []byte) (map[int]map[string]map[string]bool, error) {
	var doc struct {
		Profiles []struct {
			PluginConfig []struct {
				Name string         `json:"name"`
				Args map[string]any `json:"args"`
			} `json:"pluginConfig"`
		} `json:"profiles"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	out := map[int]map[string]map[string]bool{}
	for i, p := range doc.Profiles {
		out[i] = map[string]map[string]bool{}
		for _, pc := range p.PluginConfig {
			keys := map[string]bool{}
			for k := range pc.Args {
				keys[k] = true
			}
			out[i][pc.Name] = keys
		}
	}
	return out, nil
}

// applySchedulerTruth fills in the policy args that must agree with the scheduler configuration
// and left out, and reports every explicit arg that contradicts it. data is the policy file as
// written, p the decoded (defaulted, not yet validated) policy.
func applySchedulerTruth(data []byte, p *descheduler.DeschedulerPolicy, truth *schedulerTruth) (field.ErrorList, error) {
	explicit, err := explicitArgs(data)
	if err != nil {
		return nil, err
	}
	var errs field.ErrorList
	for i := range p.Profiles {
		prof := &p.Profiles[i]
		// The schedulers whose pods the profile's NodeCRDResourceFit looks at; DefaultEvictor's
		// nodeFit checks the same pods.
		// Only an enabled NodeCRDResourceFit counts: args kept for a disabled one are accepted (as
		// upstream) but decide nothing.
		var fitSchedulers []string
		for _, pc := range prof.PluginConfigs {
			if a, ok := pc.Args.(*nodecrdresourcefit.NodeCRDResourceFitArgs); ok && enabledAnywhere(prof, pc.Name) {
				fitSchedulers = a.SchedulerNames
			}
		}
		for j := range prof.PluginConfigs {
			pc := &prof.PluginConfigs[j]
			path := field.NewPath("profiles").Index(i).Child("pluginConfig").Index(j).Child("args")
			given := explicit[i][pc.Name]
			switch a := pc.Args.(type) {
			case *nodecrdresourcefit.NodeCRDResourceFitArgs:
				e, err := truth.missingCRPolicy(path, given["missingCRPolicy"], &a.MissingCRPolicy, a.SchedulerNames)
				if err != nil {
					return nil, err
				}
				errs = append(errs, e...)
			case *defaultevictor.DefaultEvictorArgs:
				e, err := truth.missingCRPolicy(path, given["missingCRPolicy"], &a.MissingCRPolicy, fitSchedulers)
				if err != nil {
					return nil, err
				}
				errs = append(errs, e...)
			case *lownodeload.LowNodeLoadArgs:
				e, err := truth.lowNodeLoad(path, given, a)
				if err != nil {
					return nil, err
				}
				errs = append(errs, e...)
			}
		}
	}
	return errs, nil
}

// missingCRPolicy fills in or checks one missingCRPolicy arg against the scheduler's
// NodeCRDResourceFit.
func (t *schedulerTruth) missingCRPolicy(path *field.Path, given bool, v *config.MissingCRPolicy, schedulerNames []string) (field.ErrorList, error) {
	sources, err := t.argsOf(schedNodeCRDResourceFit, schedulerNames)
	if err != nil || len(sources) == 0 {
		return nil, err
	}
	p := path.Child("missingCRPolicy")
	var errs field.ErrorList
	for k, s := range sources {
		a, ok := s.args.(*config.NodeCRDResourceFitArgs)
		if !ok {
			return nil, fmt.Errorf("%s: args of type %T", s.fieldPath(t.file, "missingCRPolicy"), s.args)
		}
		switch {
		case !given && k == 0:
			*v = a.MissingCRPolicy
		case *v != a.MissingCRPolicy:
			errs = append(errs, field.Invalid(p, *v, t.contradiction(given, s.fieldPath(t.file, "missingCRPolicy"), a.MissingCRPolicy)))
		}
	}
	return errs, nil
}

// lowNodeLoad fills in or checks LowNodeLoad's args against the scheduler's LoadAware.
func (t *schedulerTruth) lowNodeLoad(path *field.Path, given map[string]bool, a *lownodeload.LowNodeLoadArgs) (field.ErrorList, error) {
	sources, err := t.argsOf(schedLoadAware, nil)
	if err != nil || len(sources) == 0 {
		return nil, err
	}
	var errs field.ErrorList
	for k, s := range sources {
		la, ok := s.args.(*config.LoadAwareArgs)
		if !ok {
			return nil, fmt.Errorf("%s: args of type %T", s.fieldPath(t.file, "usageThresholds"), s.args)
		}
		first := k == 0
		if !a.UseDeviationThresholds {
			switch {
			case !given["highThresholds"] && first:
				a.HighThresholds = maps.Clone(la.UsageThresholds)
				if !given["lowThresholds"] {
					a.LowThresholds = defaultLowThresholds(a.HighThresholds)
				}
			case !maps.Equal(a.HighThresholds, la.UsageThresholds):
				errs = append(errs, field.Invalid(path.Child("highThresholds"), a.HighThresholds,
					t.contradiction(given["highThresholds"], s.fieldPath(t.file, "usageThresholds"), la.UsageThresholds)))
			}
		}
		switch {
		case !given["nodeMetricExpirationSeconds"] && first:
			s := la.NodeMetricExpirationSeconds
			a.NodeMetricExpirationSeconds = &s
		case a.NodeMetricExpirationSeconds == nil || *a.NodeMetricExpirationSeconds != la.NodeMetricExpirationSeconds:
			var v any
			if a.NodeMetricExpirationSeconds != nil {
				v = *a.NodeMetricExpirationSeconds
			}
			errs = append(errs, field.Invalid(path.Child("nodeMetricExpirationSeconds"), v,
				t.contradiction(given["nodeMetricExpirationSeconds"], s.fieldPath(t.file, "nodeMetricExpirationSeconds"), la.NodeMetricExpirationSeconds)))
		}
		switch {
		case !given["estimatedScalingFactors"] && first:
			a.EstimatedScalingFactors = maps.Clone(la.EstimatedScalingFactors)
		case !sameFactors(a.EstimatedScalingFactors, la.EstimatedScalingFactors):
			errs = append(errs, field.Invalid(path.Child("estimatedScalingFactors"), a.EstimatedScalingFactors,
				t.contradiction(given["estimatedScalingFactors"], s.fieldPath(t.file, "estimatedScalingFactors"), la.EstimatedScalingFactors)))
		}
		switch {
		case !given["estimatedSecondsAfterPodScheduled"] && first:
			v := la.EstimatedSecondsAfterPodScheduled
			a.EstimatedSecondsAfterPodScheduled = &v
		case a.EstimatedSecondsAfterPodScheduled == nil || *a.EstimatedSecondsAfterPodScheduled != la.EstimatedSecondsAfterPodScheduled:
			var v any
			if a.EstimatedSecondsAfterPodScheduled != nil {
				v = *a.EstimatedSecondsAfterPodScheduled
			}
			errs = append(errs, field.Invalid(path.Child("estimatedSecondsAfterPodScheduled"), v,
				t.contradiction(given["estimatedSecondsAfterPodScheduled"], s.fieldPath(t.file, "estimatedSecondsAfterPodScheduled"), la.EstimatedSecondsAfterPodScheduled)))
		}
		if !given["resourceWeights"] && first {
			a.ResourceWeights = maps.Clone(la.ResourceWeights)
		}
	}
	return errs, nil
}

// sameFactors reports whether two estimatedScalingFactors estimate alike: the same positive factors
// (a factor of zero, like a missing one, estimates nothing).
func sameFactors(a, b map[corev1.ResourceName]int64) bool {
	pos := func(m map[corev1.ResourceName]int64) map[corev1.ResourceName]int64 {
		out := map[corev1.ResourceName]int64{}
		for k, v := range m {
			if v > 0 {
				out[k] = v
			}
		}
		return out
	}
	return maps.Equal(pos(a), pos(b))
}

// contradiction describes a policy value that differs from the scheduler's at schedPath. A value
// the policy does not set differs only when two scheduler profiles disagree with each other.
func (t *schedulerTruth) contradiction(given bool, schedPath string, want any) string {
	if given {
		return fmt.Sprintf("contradicts the scheduler configuration: %s is %s (leave this field out to use the scheduler's value)", schedPath, show(want))
	}
	return fmt.Sprintf("the scheduler profiles this plugin follows disagree: %s is %s; make them agree, or limit the plugin to one of them", schedPath, show(want))
}

// show prints a value as it reads in a configuration file (maps as JSON objects).
func show(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

// defaultLowThresholds returns LowNodeLoad's default low thresholds for the resources of high,
// each capped at its high threshold; resources without a default are left for the policy to set
// (validation names them).
func defaultLowThresholds(high map[corev1.ResourceName]int64) map[corev1.ResourceName]int64 {
	def := lownodeload.DefaultLowThresholds()
	out := map[corev1.ResourceName]int64{}
	for r, h := range high {
		if l, ok := def[r]; ok {
			out[r] = min(l, h)
		}
	}
	return out
}

// loadPolicyFile reads, decodes and validates a policy file; with a scheduler configuration, the
// args shared with accord-scheduler are filled in from it and checked against it first.
func loadPolicyFile(policyFile, schedulerConfigFile string, reg framework.Registry, args framework.ArgsTypes) (*descheduler.DeschedulerPolicy, error) {
	if schedulerConfigFile == "" {
		return policy.Load(policyFile, reg, args)
	}
	data, err := os.ReadFile(policyFile)
	if err != nil {
		return nil, fmt.Errorf("reading policy: %w", err)
	}
	p, err := policy.Decode(data, args)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", policyFile, err)
	}
	truth, err := loadSchedulerTruth(schedulerConfigFile)
	if err != nil {
		return nil, fmt.Errorf("--scheduler-config-file: %w", err)
	}
	errs, err := applySchedulerTruth(data, p, truth)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", policyFile, err)
	}
	errs = append(errs, policy.Validate(p, reg, args)...)
	if len(errs) > 0 {
		return nil, fmt.Errorf("policy %s (with scheduler configuration %s): %w", policyFile, schedulerConfigFile, errs.ToAggregate())
	}
	return p, nil
}

// enabledAnywhere reports whether the profile enables the plugin at some extension point.
func enabledAnywhere(prof *descheduler.DeschedulerProfile, name string) bool {
	for _, point := range policy.ExtensionPoints {
		if slices.Contains(policy.Enabled(&prof.Plugins, point), name) {
			return true
		}
	}
	return false
}
