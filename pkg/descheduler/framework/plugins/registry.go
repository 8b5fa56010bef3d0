// Package plugins assembles the in-tree plugins of the descheduler.
package plugins

import (
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/defaultevictor"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/evictionapi"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/highnodeutilization"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/lownodeload"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/lownodeutilization"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/nodecrdresourcefit"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/podlifetime"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/podmigration"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/removeduplicates"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/removefailedpods"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/removepodshavingtoomanyrestarts"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/removepodsviolatinginterpodantiaffinity"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/removepodsviolatingnodeaffinity"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/removepodsviolatingnodetaints"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/removepodsviolatingtopologyspreadconstraint"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/reservationfirst"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/schedulersimulation"
	schedplugins "github.com/accord-sched/accord/pkg/scheduler/plugins"
)

// Descriptors returns the in-tree plugins, one descriptor each. The list is built on each call;
// callers may append to it.
func Descriptors() []framework.Descriptor {
	return []framework.Descriptor{
		{Name: defaultevictor.Name, Factory: defaultevictor.New, Args: &defaultevictor.DefaultEvictorArgs{}},
		{Name: evictionapi.Name, Factory: evictionapi.New},
		{Name: nodecrdresourcefit.Name, Factory: nodecrdresourcefit.New, Args: &nodecrdresourcefit.NodeCRDResourceFitArgs{}},
		{Name: lownodeload.Name, Factory: lownodeload.New, Args: &lownodeload.LowNodeLoadArgs{}},
		{Name: removepodsviolatingnodetaints.Name, Factory: removepodsviolatingnodetaints.New, Args: &removepodsviolatingnodetaints.RemovePodsViolatingNodeTaintsArgs{}},
		{Name: removepodsviolatingnodeaffinity.Name, Factory: removepodsviolatingnodeaffinity.New, Args: &removepodsviolatingnodeaffinity.RemovePodsViolatingNodeAffinityArgs{}},
		{Name: removepodshavingtoomanyrestarts.Name, Factory: removepodshavingtoomanyrestarts.New, Args: &removepodshavingtoomanyrestarts.RemovePodsHavingTooManyRestartsArgs{}},
		{Name: podlifetime.Name, Factory: podlifetime.New, Args: &podlifetime.PodLifeTimeArgs{}},
		{Name: removefailedpods.Name, Factory: removefailedpods.New, Args: &removefailedpods.RemoveFailedPodsArgs{}},
		{Name: lownodeutilization.Name, Factory: lownodeutilization.New, Args: &lownodeutilization.LowNodeUtilizationArgs{}},
		{Name: highnodeutilization.Name, Factory: highnodeutilization.New, Args: &highnodeutilization.HighNodeUtilizationArgs{}},
		{Name: removeduplicates.Name, Factory: removeduplicates.New, Args: &removeduplicates.RemoveDuplicatesArgs{}},
		{Name: removepodsviolatinginterpodantiaffinity.Name, Factory: removepodsviolatinginterpodantiaffinity.New, Args: &removepodsviolatinginterpodantiaffinity.RemovePodsViolatingInterPodAntiAffinityArgs{}},
		{Name: removepodsviolatingtopologyspreadconstraint.Name, Factory: removepodsviolatingtopologyspreadconstraint.New, Args: &removepodsviolatingtopologyspreadconstraint.RemovePodsViolatingTopologySpreadConstraintArgs{}},
		{Name: schedulersimulation.Name, Factory: schedulersimulation.New, Args: &schedulersimulation.SchedulerSimulationArgs{}},
		{Name: reservationfirst.Name, Factory: reservationfirst.New, Args: &reservationfirst.ReservationFirstArgs{}},
		{Name: podmigration.Name, Factory: podmigration.New},
	}
}

// NewInTreeRegistry returns a new registry of the in-tree plugins.
func NewInTreeRegistry() framework.Registry {
	reg, _ := registries()
	return reg
}

// NewInTreeArgs returns the args types of the in-tree plugins.
func NewInTreeArgs() framework.ArgsTypes {
	_, args := registries()
	return args
}

func registries() (framework.Registry, framework.ArgsTypes) {
	reg, args, err := framework.Registries(Descriptors())
	if err != nil {
		panic("in-tree descheduler plugins: " + err.Error()) // the list above is fixed; its test builds it
	}
	return reg, args
}

// Unfollowed returns the scheduler plugins of sched that have args but neither a descheduler plugin
// of desched whose args follow them (framework.SchedulerFollower) nor a NotFollowed reason: a rule
// the scheduler enforces and the descheduler might contradict.
func Unfollowed(sched []schedplugins.Descriptor, desched []framework.Descriptor) []string {
	followed := map[string]bool{}
	for _, d := range desched {
		if f, ok := d.Args.(framework.SchedulerFollower); ok {
			for _, name := range f.FollowsScheduler() {
				followed[name] = true
			}
		}
	}
	var out []string
	for _, s := range sched {
		if s.Args != nil && s.NotFollowed == "" && !followed[s.Name] {
			out = append(out, s.Name)
		}
	}
	return out
}
