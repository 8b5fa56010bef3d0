package defaultevictor

import (
	"k8s.io/utils/ptr"

	schedulingapi "k8s.io/kubernetes/pkg/apis/scheduling"

	"github.com/accord-sched/accord/apis/config"
)

// SetDefaults_DefaultEvictorArgs sets the priority threshold to the system-critical priority when
// neither a value nor a class name is given, the no-eviction policy to Preferred and the
// missingCRPolicy to the scheduler's NodeCRDResourceFit default (config.DefaultMissingCRPolicy).
func SetDefaults_DefaultEvictorArgs(a *DefaultEvictorArgs) {
	if a.PriorityThreshold == nil || (a.PriorityThreshold.Value == nil && a.PriorityThreshold.Name == "") {
		a.PriorityThreshold = &PriorityThreshold{Value: ptr.To[int32](schedulingapi.SystemCriticalPriority)}
	}
	if a.NoEvictionPolicy == "" {
		a.NoEvictionPolicy = PreferredNoEvictionPolicy
	}
	if a.MissingCRPolicy == "" {
		a.MissingCRPolicy = config.DefaultMissingCRPolicy
	}
}

// SetDefaults implements framework.ArgsDefaulter.
func (a *DefaultEvictorArgs) SetDefaults() { SetDefaults_DefaultEvictorArgs(a) }
