package nodecrdresourcefit

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/apis/config"
	"github.com/accord-sched/accord/pkg/constraints"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NodeCRDResourceFitArgs configures the NodeCRDResourceFit descheduler plugin.
type NodeCRDResourceFitArgs struct {
	metav1.TypeMeta `json:",inline"`

	// MissingCRPolicy is what a node without a ClusterScopedResource means, exactly as the scheduler
	// plugin's arg of the same name: Reject makes every pod on it a violator, Ignore makes none.
	// Defaults to Reject; with --scheduler-config-file it defaults to the scheduler's value, and
	// another value is rejected.
	MissingCRPolicy config.MissingCRPolicy `json:"missingCRPolicy,omitempty"`
	// Namespaces limits the plugin to (include) or keeps it away from (exclude) namespaces.
	Namespaces *pluginutil.Namespaces `json:"namespaces,omitempty"`
	// LabelSelector limits the plugin to the pods it matches.
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// SchedulerNames, when set, limits the plugin to pods whose spec.schedulerName is listed (e.g.
	// accord-scheduler when it runs as a secondary profile); by default every pod is checked.
	SchedulerNames []string `json:"schedulerNames,omitempty"`
}

// MissingCRPolicyArg implements framework.MissingCRPolicyArgs.
func (a *NodeCRDResourceFitArgs) MissingCRPolicyArg() config.MissingCRPolicy {
	return a.MissingCRPolicy
}

// SchedulerNamesArg is SchedulerNames: DefaultEvictor's nodeFit follows the missingCRPolicy of the
// same schedulers.
func (a *NodeCRDResourceFitArgs) SchedulerNamesArg() []string { return a.SchedulerNames }

// FollowsScheduler implements framework.SchedulerFollower: missingCRPolicy follows the scheduler's
// NodeCRDResourceFit (constraints.CRFitFollowing).
func (a *NodeCRDResourceFitArgs) FollowsScheduler() []string {
	return []string{constraints.CRFitFollowing.Scheduler}
}

// FollowScheduler implements framework.SchedulerFollower: missingCRPolicy is that of the scheduler
// profiles named by schedulerNames (all when empty).
func (a *NodeCRDResourceFitArgs) FollowScheduler(f *framework.Follow) field.ErrorList {
	return framework.FollowShared(f, a, constraints.CRFitFollowing, a.SchedulerNames)
}
