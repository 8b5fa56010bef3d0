package defaultevictor

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/apis/config"
	"github.com/accord-sched/accord/pkg/constraints"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DefaultEvictorArgs configures the DefaultEvictor plugin. The fields match the upstream
// descheduler's DefaultEvictorArgs so existing policies keep working.
type DefaultEvictorArgs struct {
	metav1.TypeMeta `json:",inline"`

	// NodeSelector (kubectl string form) limits the nodes nodeFit considers as new homes for a pod.
	NodeSelector string `json:"nodeSelector,omitempty"`
	// LabelSelector, when set, only lets pods it matches be evicted.
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// NamespaceLabelSelector, when set (and not empty), only lets pods be evicted whose namespace's
	// labels it matches.
	NamespaceLabelSelector *metav1.LabelSelector `json:"namespaceLabelSelector,omitempty"`
	// PriorityThreshold: pods at or above it are system-critical and are protected unless
	// SystemCriticalPods is disabled. Defaults to the system-critical priority (2000000000).
	PriorityThreshold *PriorityThreshold `json:"priorityThreshold,omitempty"`
	// NodeFit makes PreEvictionFilter keep pods that fit no other Ready node (resources, taints,
	// required node affinity, ClusterScopedResource).
	NodeFit bool `json:"nodeFit,omitempty"`
	// MissingCRPolicy is what nodeFit makes of a node without a ClusterScopedResource: under Reject
	// no pod that requests a resource fits it; under Ignore the ClusterScopedResource check passes
	// there, as in the scheduler's NodeCRDResourceFit plugin with the arg of the same name.
	// Defaults to Reject; with --scheduler-config-file it defaults to the scheduler's
	// NodeCRDResourceFit missingCRPolicy, and another value is rejected (Accord; not an upstream field).
	MissingCRPolicy config.MissingCRPolicy `json:"missingCRPolicy,omitempty"`
	// MinReplicas protects pods whose owner has fewer pods than this.
	MinReplicas int32 `json:"minReplicas,omitempty"`
	// MinPodAge protects pods younger than this.
	MinPodAge *metav1.Duration `json:"minPodAge,omitempty"`
	// NoEvictionPolicy is Preferred (default) or Mandatory; with Mandatory, pods annotated
	// descheduler.alpha.kubernetes.io/prefer-no-eviction are never evicted.
	NoEvictionPolicy NoEvictionPolicy `json:"noEvictionPolicy,omitempty"`
	// PodProtections turns default protections off and extra protections on.
	PodProtections PodProtections `json:"podProtections,omitempty"`

	// Deprecated: use podProtections.defaultDisabled PodsWithLocalStorage.
	EvictLocalStoragePods bool `json:"evictLocalStoragePods,omitempty"`
	// Deprecated: use podProtections.defaultDisabled DaemonSetPods.
	EvictDaemonSetPods bool `json:"evictDaemonSetPods,omitempty"`
	// Deprecated: use podProtections.defaultDisabled SystemCriticalPods.
	EvictSystemCriticalPods bool `json:"evictSystemCriticalPods,omitempty"`
	// Deprecated: use podProtections.extraEnabled PodsWithPVC (PodsWithPVC is protected by default
	// in Accord, so this changes nothing).
	IgnorePvcPods bool `json:"ignorePvcPods,omitempty"`
	// Deprecated: use podProtections.defaultDisabled FailedBarePods.
	EvictFailedBarePods bool `json:"evictFailedBarePods,omitempty"`
	// Deprecated: use podProtections.extraEnabled PodsWithoutPDB.
	IgnorePodsWithoutPDB bool `json:"ignorePodsWithoutPDB,omitempty"`
}

// PriorityThreshold is a priority given by value or by PriorityClass name (not both).
type PriorityThreshold struct {
	Name  string `json:"name,omitempty"`
	Value *int32 `json:"value,omitempty"`
}

// PodProtections lists protections to turn off (DefaultDisabled) and on (ExtraEnabled), and the
// settings of those that have some (Config).
type PodProtections struct {
	ExtraEnabled    []PodProtection `json:"extraEnabled,omitempty"`
	DefaultDisabled []PodProtection `json:"defaultDisabled,omitempty"`
	// Config holds the settings of protections that have some; each field is named after its
	// protection.
	Config *PodProtectionsConfig `json:"config,omitempty"`
}

// PodProtectionsConfig holds the settings of the protections that have some.
type PodProtectionsConfig struct {
	// PodsWithPVC narrows the PodsWithPVC protection to some storage classes.
	PodsWithPVC *PodsWithPVCConfig `json:"PodsWithPVC,omitempty"`
}

// PodsWithPVCConfig narrows the PodsWithPVC protection.
type PodsWithPVCConfig struct {
	// ProtectedStorageClasses, when not empty, protects only the pods with a PersistentVolumeClaim of
	// one of these storage classes (a claim whose class cannot be read protects its pod); empty
	// protects every pod with a claim.
	ProtectedStorageClasses []ProtectedStorageClass `json:"protectedStorageClasses,omitempty"`
}

// ProtectedStorageClass names a storage class whose pods PodsWithPVC protects.
type ProtectedStorageClass struct {
	Name string `json:"name"`
}

// PodProtection names a class of pods the DefaultEvictor protects from eviction.
type PodProtection string

// Protections. Mirror and static pods, terminating pods are always protected.
const (
	// PodsWithLocalStorage: pods with emptyDir or hostPath volumes (default on).
	PodsWithLocalStorage PodProtection = "PodsWithLocalStorage"
	// DaemonSetPods: pods owned by a DaemonSet (default on).
	DaemonSetPods PodProtection = "DaemonSetPods"
	// SystemCriticalPods: pods at or above the priority threshold, or of the system-cluster-critical
	// and system-node-critical classes (default on).
	SystemCriticalPods PodProtection = "SystemCriticalPods"
	// FailedBarePods: failed pods without an owner (default on).
	FailedBarePods PodProtection = "FailedBarePods"
	// BarePods: running pods without an owner, which nothing would recreate (default on; Accord).
	BarePods PodProtection = "BarePods"
	// PodsWithPVC: pods with PersistentVolumeClaim volumes (default on in Accord).
	PodsWithPVC PodProtection = "PodsWithPVC"
	// PodsWithoutPDB: pods no PodDisruptionBudget selects (extra).
	PodsWithoutPDB PodProtection = "PodsWithoutPDB"
	// PodsWithResourceClaims: pods with DRA ResourceClaims (spec.resourceClaims) (extra).
	PodsWithResourceClaims PodProtection = "PodsWithResourceClaims"
)

// NoEvictionPolicy says how the prefer-no-eviction annotation is read.
type NoEvictionPolicy string

// No-eviction policies.
const (
	PreferredNoEvictionPolicy NoEvictionPolicy = "Preferred"
	MandatoryNoEvictionPolicy NoEvictionPolicy = "Mandatory"
)

// MissingCRPolicyArg implements framework.MissingCRPolicyArgs.
func (a *DefaultEvictorArgs) MissingCRPolicyArg() config.MissingCRPolicy { return a.MissingCRPolicy }

// nodeCRDResourceFit is the descheduler plugin whose schedulerNames nodeFit's missingCRPolicy
// follows (its package imports this one in tests, so the name is taken from pkg/constraints).
const nodeCRDResourceFit = constraints.NodeCRDResourceFitName

// FollowsScheduler implements framework.SchedulerFollower: missingCRPolicy follows the scheduler's
// NodeCRDResourceFit (constraints.CRFitFollowing).
func (a *DefaultEvictorArgs) FollowsScheduler() []string {
	return []string{constraints.CRFitFollowing.Scheduler}
}

// FollowScheduler implements framework.SchedulerFollower: nodeFit checks the pods of the schedulers
// the profile's enabled NodeCRDResourceFit looks at (all, without one), so missingCRPolicy is
// theirs.
func (a *DefaultEvictorArgs) FollowScheduler(f *framework.Follow) field.ErrorList {
	var names []string
	if fit, ok := f.Peers[nodeCRDResourceFit].(interface{ SchedulerNamesArg() []string }); ok {
		names = fit.SchedulerNamesArg()
	}
	return framework.FollowShared(f, a, constraints.CRFitFollowing, names)
}
