// Package plugins is the one list of accord-scheduler's plugins. accord-scheduler
// (pkg/scheduler/server) registers exactly these with kube-scheduler, and the descheduler's
// scheduler simulation (pkg/descheduler/simulator) builds its frameworks from the same list, so a
// plugin added here is both scheduled with and simulated, with the same factory and args.
package plugins

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/accord-sched/accord/apis/config"
	configscheme "github.com/accord-sched/accord/apis/config/scheme"
	"github.com/accord-sched/accord/pkg/constraints"
	"github.com/accord-sched/accord/pkg/scheduler/crcache"
	"github.com/accord-sched/accord/pkg/scheduler/plugins/loadaware"
	"github.com/accord-sched/accord/pkg/scheduler/plugins/nodecrdresourcefit"
	"github.com/accord-sched/accord/pkg/scheduler/plugins/reservation"
)

// Descriptor describes one scheduler plugin.
type Descriptor struct {
	// Name is the plugin's name in the registry and in KubeSchedulerConfiguration profiles.
	Name string
	// Factory returns the plugin factory. Every plugin it builds reads Accord's custom resources
	// from cache, which all the Accord plugins of one scheduler (or of one simulation) share.
	Factory func(cache *crcache.Cache) frameworkruntime.PluginFactory
	// Args is an empty value of the internal args type the factory is given (nil for a plugin
	// without args). Either apis/config registers it (internal and v1 types, defaulted by
	// apis/config/v1), or RegisterArgs registers it as one type for both versions, defaulted by its
	// SetDefaults (the args of a rule shared with the descheduler: the rule's struct in
	// pkg/constraints); either way a profile that enables the plugin gets its defaulted args even
	// without a pluginConfig entry.
	Args runtime.Object
	// NotFollowed, for a plugin with args, says why no descheduler plugin's args follow them (a
	// rule only the scheduler enforces). Left empty, some descheduler plugin's args must name Name
	// in their FollowsScheduler (the descheduler's plugins package tests that).
	NotFollowed string
}

// Descriptors returns accord-scheduler's plugins. The list is built on each call; callers may
// append to it (tests add plugins of their own).
func Descriptors() []Descriptor {
	return []Descriptor{
		{Name: nodecrdresourcefit.Name, Factory: nodecrdresourcefit.NewFactory, Args: &config.NodeCRDResourceFitArgs{}},
		{Name: loadaware.Name, Factory: loadaware.NewFactory, Args: &config.LoadAwareArgs{}},
		{Name: reservation.Name, Factory: reservation.NewFactory},
	}
}

func init() {
	if err := RegisterArgs(Descriptors()); err != nil {
		panic("accord-scheduler's plugins: " + err.Error()) // the list above is fixed; its test decodes every args type
	}
}

// RegisterArgs registers the args types of descriptors that apis/config does not register with
// kube-scheduler's configuration schemes, each as one type for the v1 and internal versions
// (apis/config/scheme.RegisterArgs), so a KubeSchedulerConfiguration decodes, defaults and hands
// them to the factory without per-version code. Descriptors() are registered at init; a caller
// adding descriptors of its own registers them before loading a configuration.
func RegisterArgs(descriptors []Descriptor) error {
	for _, d := range descriptors {
		if d.Args == nil {
			continue
		}
		if err := configscheme.RegisterArgs(d.Name, d.Args); err != nil {
			return err
		}
	}
	return nil
}

// Registry returns the out-of-tree registry of the descriptors, their plugins reading Accord's CRs
// from cache.
func Registry(descriptors []Descriptor, cache *crcache.Cache) frameworkruntime.Registry {
	r := make(frameworkruntime.Registry, len(descriptors))
	for _, d := range descriptors {
		r[d.Name] = d.Factory(cache)
	}
	return r
}

// Refusal is one of these plugins' Filter reasons found in a scheduler message.
type Refusal struct {
	Plugin string `json:"plugin"`
	Reason string `json:"reason"`
}

// Refusals are the plugins of this list whose Filter reasons (the plugins' own reason texts) a
// scheduler message (a FailedScheduling Event's, a PodScheduled condition's) names, for the
// resources the pod requests and those LoadAware has thresholds for by default. It lives beside the
// list so that a plugin's reasons are named where the plugin is, not by each reader (kubectl accord why).
func Refusals(pod *corev1.Pod, msg string) []Refusal {
	if msg == "" {
		return nil
	}
	var out []Refusal
	add := func(plugin, reason string) {
		if strings.Contains(msg, reason) && !slices.Contains(out, Refusal{plugin, reason}) {
			out = append(out, Refusal{Plugin: plugin, Reason: reason})
		}
	}
	add(nodecrdresourcefit.Name, nodecrdresourcefit.ReasonNoCR)
	for _, name := range constraints.AppendRequestedResources(nil, pod) {
		add(nodecrdresourcefit.Name, nodecrdresourcefit.MissingResourceReason(name))
	}
	names := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}
	for _, c := range pod.Spec.Containers {
		for name := range c.Resources.Requests {
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	for _, name := range names {
		add(loadaware.Name, loadaware.OverThresholdReason(name))
	}
	add(reservation.Name, reservation.ReasonHeld)
	return out
}
