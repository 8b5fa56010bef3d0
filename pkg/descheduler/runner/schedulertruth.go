package runner

import (
	"fmt"
	"os"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"sigs.k8s.io/yaml"

	accordscheme "github.com/accord-sched/accord/apis/config/scheme"
	"github.com/accord-sched/accord/apis/descheduler"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/policy"
	"github.com/accord-sched/accord/pkg/descheduler/simulator"
)

// With --scheduler-config-file, the policy args that follow accord-scheduler's (the args types
// implementing framework.SchedulerFollower, e.g. NodeCRDResourceFit's and DefaultEvictor's
// missingCRPolicy, LowNodeLoad's thresholds and usage estimate) are filled in from the scheduler
// configuration where the policy leaves them out, and rejected with both field paths where they
// contradict it. Each args type says which fields follow which scheduler plugin; this file only
// reads the scheduler configuration and calls them.

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

// argsOf returns, for every profile that enables plugin, that profile's args of the plugin.
func (t *schedulerTruth) argsOf(plugin string) ([]framework.SchedulerArgs, error) {
	var out []framework.SchedulerArgs
	for i := range t.cfg.Profiles {
		prof := &t.cfg.Profiles[i]
		if !pluginEnabled(prof.Plugins, plugin) {
			continue
		}
		path := field.NewPath("profiles").Index(i)
		found := false
		for j := range prof.PluginConfig {
			if prof.PluginConfig[j].Name == plugin {
				out = append(out, framework.SchedulerArgs{SchedulerName: prof.SchedulerName, File: t.file,
					Path: path.Child("pluginConfig").Index(j).Child("args"), Args: prof.PluginConfig[j].Args})
				found = true
			}
		}
		if !found {
			def, err := defaultSchedulerArgs(plugin)
			if err != nil {
				return nil, err
			}
			out = append(out, framework.SchedulerArgs{SchedulerName: prof.SchedulerName, File: t.file, Path: path, Defaulted: true, Args: def})
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
// no pluginConfig for it: the v1 defaults, through the scheduler's own scheme; nil for args that
// scheme does not know (an out-of-tree plugin's).
func defaultSchedulerArgs(plugin string) (any, error) {
	doc := "apiVersion: kubescheduler.config.k8s.io/v1\nkind: " + plugin + "Args\n"
	obj, _, err := accordscheme.Codecs.UniversalDecoder().Decode([]byte(doc), nil, nil)
	if runtime.IsNotRegisteredError(err) {
		// An out-of-tree plugin decodes and defaults its own args (kube-scheduler hands it nil).
		return nil, nil
	}
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
// and are left out, and reports every explicit arg that contradicts it: it calls FollowScheduler of
// every pluginConfig whose args implement framework.SchedulerFollower. data is the policy file as
// written, p the decoded (defaulted, not yet validated) policy.
func applySchedulerTruth(data []byte, p *descheduler.DeschedulerPolicy, truth *schedulerTruth) (field.ErrorList, error) {
	explicit, err := explicitArgs(data)
	if err != nil {
		return nil, err
	}
	sources := map[string][]framework.SchedulerArgs{}
	var errs field.ErrorList
	for i := range p.Profiles {
		prof := &p.Profiles[i]
		// Args kept for a disabled plugin are accepted (as upstream) but decide nothing, so only
		// enabled plugins are peers.
		peers := map[string]runtime.Object{}
		for _, pc := range prof.PluginConfigs {
			if pc.Args != nil && enabledAnywhere(prof, pc.Name) {
				peers[pc.Name] = pc.Args
			}
		}
		for j := range prof.PluginConfigs {
			pc := &prof.PluginConfigs[j]
			follower, ok := pc.Args.(framework.SchedulerFollower)
			if !ok {
				continue
			}
			for _, plugin := range follower.FollowsScheduler() {
				if _, done := sources[plugin]; done {
					continue
				}
				if sources[plugin], err = truth.argsOf(plugin); err != nil {
					return nil, err
				}
			}
			errs = append(errs, follower.FollowScheduler(&framework.Follow{
				Path:      field.NewPath("profiles").Index(i).Child("pluginConfig").Index(j).Child("args"),
				Given:     explicit[i][pc.Name],
				Peers:     peers,
				Scheduler: sources,
			})...)
		}
	}
	return errs, nil
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
