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
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/removeduplicates"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/removefailedpods"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/removepodshavingtoomanyrestarts"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/removepodsviolatinginterpodantiaffinity"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/removepodsviolatingnodeaffinity"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/removepodsviolatingnodetaints"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/removepodsviolatingtopologyspreadconstraint"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/reservationfirst"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/schedulersimulation"
)

// NewInTreeRegistry returns a new registry of the in-tree plugins.
func NewInTreeRegistry() framework.Registry {
	return framework.Registry{
		defaultevictor.Name:                              defaultevictor.New,
		evictionapi.Name:                                 evictionapi.New,
		nodecrdresourcefit.Name:                          nodecrdresourcefit.New,
		lownodeload.Name:                                 lownodeload.New,
		removepodsviolatingnodetaints.Name:               removepodsviolatingnodetaints.New,
		removepodsviolatingnodeaffinity.Name:             removepodsviolatingnodeaffinity.New,
		removepodshavingtoomanyrestarts.Name:             removepodshavingtoomanyrestarts.New,
		podlifetime.Name:                                 podlifetime.New,
		removefailedpods.Name:                            removefailedpods.New,
		lownodeutilization.Name:                          lownodeutilization.New,
		highnodeutilization.Name:                         highnodeutilization.New,
		removeduplicates.Name:                            removeduplicates.New,
		removepodsviolatinginterpodantiaffinity.Name:     removepodsviolatinginterpodantiaffinity.New,
		removepodsviolatingtopologyspreadconstraint.Name: removepodsviolatingtopologyspreadconstraint.New,
		schedulersimulation.Name:                         schedulersimulation.New,
		reservationfirst.Name:                            reservationfirst.New,
	}
}

// NewInTreeArgs returns the args types of the in-tree plugins.
func NewInTreeArgs() framework.ArgsTypes {
	return framework.ArgsTypes{
		defaultevictor.Name:                              &defaultevictor.DefaultEvictorArgs{},
		nodecrdresourcefit.Name:                          &nodecrdresourcefit.NodeCRDResourceFitArgs{},
		lownodeload.Name:                                 &lownodeload.LowNodeLoadArgs{},
		removepodsviolatingnodetaints.Name:               &removepodsviolatingnodetaints.RemovePodsViolatingNodeTaintsArgs{},
		removepodsviolatingnodeaffinity.Name:             &removepodsviolatingnodeaffinity.RemovePodsViolatingNodeAffinityArgs{},
		removepodshavingtoomanyrestarts.Name:             &removepodshavingtoomanyrestarts.RemovePodsHavingTooManyRestartsArgs{},
		podlifetime.Name:                                 &podlifetime.PodLifeTimeArgs{},
		removefailedpods.Name:                            &removefailedpods.RemoveFailedPodsArgs{},
		lownodeutilization.Name:                          &lownodeutilization.LowNodeUtilizationArgs{},
		highnodeutilization.Name:                         &highnodeutilization.HighNodeUtilizationArgs{},
		removeduplicates.Name:                            &removeduplicates.RemoveDuplicatesArgs{},
		removepodsviolatinginterpodantiaffinity.Name:     &removepodsviolatinginterpodantiaffinity.RemovePodsViolatingInterPodAntiAffinityArgs{},
		removepodsviolatingtopologyspreadconstraint.Name: &removepodsviolatingtopologyspreadconstraint.RemovePodsViolatingTopologySpreadConstraintArgs{},
		schedulersimulation.Name:                         &schedulersimulation.SchedulerSimulationArgs{},
	}
}
