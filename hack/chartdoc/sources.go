package main

import (
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/accord-sched/accord/apis/config/scheme"
	"github.com/accord-sched/accord/apis/descheduler"
	"github.com/accord-sched/accord/pkg/descheduler/evictions"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	deschedplugins "github.com/accord-sched/accord/pkg/descheduler/framework/plugins"
	schedplugins "github.com/accord-sched/accord/pkg/scheduler/plugins"
)

// schedulerArgsVersion is the group version the scheduler plugins' args are written in
// (KubeSchedulerConfiguration's pluginConfig).
var schedulerArgsVersion = schema.GroupVersion{Group: "kubescheduler.config.k8s.io", Version: "v1"}

// policyLimits are the eviction caps a DeschedulerPolicy gets when it sets none, under the policy's
// own field names.
type policyLimits struct {
	MaxNoOfPodsToEvictPerNode      *int `json:"maxNoOfPodsToEvictPerNode,omitempty"`
	MaxNoOfPodsToEvictPerNamespace *int `json:"maxNoOfPodsToEvictPerNamespace,omitempty"`
	MaxNoOfPodsToEvictTotal        *int `json:"maxNoOfPodsToEvictTotal,omitempty"`
}

// Sources returns the defaults a region may name, each a defaulted object (a pointer to a struct
// whose JSON field names are the ones written in configurations), made by the binaries' own
// defaulting:
//
//	scheduler.NAME     the args of accord-scheduler's plugin NAME, in kubescheduler.config.k8s.io/v1,
//	                   defaulted by kube-scheduler's configuration scheme (apis/config/v1's defaulters)
//	descheduler.NAME   the args of the descheduler plugin NAME, defaulted by its SetDefaults
//	descheduler.limits the eviction caps of a policy that sets none (evictions.LimitsFromPolicy)
//
// The plugins are the ones the binaries register (their Descriptors), so a plugin that is added,
// renamed or moved needs no change here.
func Sources() (map[string]any, error) {
	out := map[string]any{}
	for _, d := range schedplugins.Descriptors() {
		if d.Args == nil {
			continue
		}
		gvk := schedulerArgsVersion.WithKind(reflect.TypeOf(d.Args).Elem().Name())
		obj, err := scheme.Scheme.New(gvk)
		if err != nil {
			return nil, fmt.Errorf("scheduler plugin %s: versioned args %s: %w", d.Name, gvk, err)
		}
		scheme.Scheme.Default(obj)
		out["scheduler."+d.Name] = obj
	}
	for _, d := range deschedplugins.Descriptors() {
		if d.Args == nil {
			continue
		}
		obj := reflect.New(reflect.TypeOf(d.Args).Elem()).Interface()
		if a, ok := obj.(framework.ArgsDefaulter); ok {
			a.SetDefaults()
		}
		out["descheduler."+d.Name] = obj
	}
	l := evictions.LimitsFromPolicy(&descheduler.DeschedulerPolicy{})
	out["descheduler.limits"] = &policyLimits{MaxNoOfPodsToEvictPerNode: l.PerNode, MaxNoOfPodsToEvictPerNamespace: l.PerNamespace, MaxNoOfPodsToEvictTotal: l.Total}
	return out, nil
}
