package defaultevictor

import (
	"k8s.io/utils/ptr"

	schedulingapi "k8s.io/kubernetes/pkg/apis/scheduling"
)

// SetDefaults_DefaultEvictorArgs sets the priority threshold to the system-critical priority when
// neither a value nor a class name is given, and the no-eviction policy to Preferred.
func SetDefaults_DefaultEvictorArgs(a *DefaultEvictorArgs) {
	if a.PriorityThreshold == nil || (a.PriorityThreshold.Value == nil && a.PriorityThreshold.Name == "") {
		a.PriorityThreshold = &PriorityThreshold{Value: ptr.To[int32](schedulingapi.SystemCriticalPriority)}
	}
	if a.NoEvictionPolicy == "" {
		a.NoEvictionPolicy = PreferredNoEvictionPolicy
	}
}

// SetDefaults implements framework.ArgsDefaulter.
func (a *DefaultEvictorArgs) SetDefaults() { SetDefaults_DefaultEvictorArgs(a) }
