package constraints

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The args of the rules both binaries enforce, declared once. Each struct here is embedded inline
// (`json:",inline"`) in the scheduler plugin's internal args (apis/config), its versioned args
// (apis/config/v1) and the descheduler plugin's args, so the fields, their defaults and their
// validation are written once; how the descheduler's fields follow the scheduler's with
// --scheduler-config-file is declared beside each struct as a Following (data the descheduler's
// generic framework.FollowScheduler applies).

// MaxPercent is the highest threshold or estimate factor, in percent.
const MaxPercent int64 = 100

// MaxWeight is the highest resource weight of the scheduler's load score.
const MaxWeight int64 = 100

// The usage estimate's defaults (Koordinator's), shared by the scheduler's LoadAware and the
// descheduler's LowNodeLoad.
const (
	// DefaultNodeMetricExpirationSeconds is the age after which a NodeMetric is ignored by default.
	DefaultNodeMetricExpirationSeconds int64 = 180
	// DefaultEstimatedSecondsAfterPodScheduled: a pod counts its estimate until a report includes
	// it, no longer.
	DefaultEstimatedSecondsAfterPodScheduled int64 = 0
)

// DefaultEstimatedScalingFactors returns the default estimatedScalingFactors (percent), as a fresh
// map.
func DefaultEstimatedScalingFactors() map[corev1.ResourceName]int64 {
	return map[corev1.ResourceName]int64{corev1.ResourceCPU: 85, corev1.ResourceMemory: 70}
}

// DefaultResourceWeights returns the default resourceWeights, as a fresh map.
func DefaultResourceWeights() map[corev1.ResourceName]int64 {
	return map[corev1.ResourceName]int64{corev1.ResourceCPU: 1, corev1.ResourceMemory: 1}
}

// UsageEstimateArgs are the load rule's shared args: how a node's usage is read (its NodeMetric,
// while fresh, plus an estimate for the pods the report does not include yet) and how resources
// weigh. The scheduler's LoadAware and the descheduler's LowNodeLoad embed them; their thresholds
// (LoadAware's usageThresholds, LowNodeLoad's highThresholds and lowThresholds) stay their own
// fields, named as Koordinator names them, and UsageFollowing declares how they correspond.
//
// +k8s:deepcopy-gen=true
type UsageEstimateArgs struct {
	// ResourceWeights is, per resource, its weight: in LoadAware's score, and in the order in
	// which LowNodeLoad takes hot nodes, cool nodes and pods. Defaults to cpu: 1, memory: 1.
	// +optional
	ResourceWeights map[corev1.ResourceName]int64 `json:"resourceWeights,omitempty"`
	// NodeMetricExpirationSeconds is the age after which a NodeMetric is ignored: the node is then
	// never filtered out and scores neutral (LoadAware), and is neither hot nor cool
	// (LowNodeLoad). Defaults to 180.
	// +optional
	NodeMetricExpirationSeconds *int64 `json:"nodeMetricExpirationSeconds,omitempty"`
	// EstimatedScalingFactors is, per resource, the percent (0-100) of the larger of a pod's
	// request and limit that counts as the pod's usage on its node until the node's NodeMetric
	// includes it: the pod is missing from podsUsage, or was assigned after the report's window
	// began. Pods that requests and limits leave without cpu or memory count 250m and 200Mi before
	// scaling; a pod's accord.dev/estimated-usage annotation replaces its estimate. Pods the report
	// lists that have left the node are taken off its usage. Defaults to cpu: 85, memory: 70
	// (Koordinator's); {} turns the estimate off (the reported usage alone).
	// +optional
	EstimatedScalingFactors map[corev1.ResourceName]int64 `json:"estimatedScalingFactors,omitempty"`
	// EstimatedSecondsAfterPodScheduled is how long after its assignment a pod counts at least its
	// estimate even when a report includes it (a starting pod uses less than it will). Defaults to
	// 0: until a report includes it.
	// +optional
	EstimatedSecondsAfterPodScheduled *int64 `json:"estimatedSecondsAfterPodScheduled,omitempty"`
}

// SetDefaults fills the fields left unset. A map that is set, even to {}, is kept as written.
func (a *UsageEstimateArgs) SetDefaults() {
	if a.ResourceWeights == nil {
		a.ResourceWeights = DefaultResourceWeights()
	}
	if a.NodeMetricExpirationSeconds == nil {
		s := DefaultNodeMetricExpirationSeconds
		a.NodeMetricExpirationSeconds = &s
	}
	if a.EstimatedScalingFactors == nil {
		a.EstimatedScalingFactors = DefaultEstimatedScalingFactors()
	}
	if a.EstimatedSecondsAfterPodScheduled == nil {
		s := DefaultEstimatedSecondsAfterPodScheduled
		a.EstimatedSecondsAfterPodScheduled = &s
	}
}

// Expiration is NodeMetricExpirationSeconds, 0 when unset.
func (a *UsageEstimateArgs) Expiration() int64 { return deref(a.NodeMetricExpirationSeconds) }

// SecondsAfterScheduled is EstimatedSecondsAfterPodScheduled, 0 when unset.
func (a *UsageEstimateArgs) SecondsAfterScheduled() int64 {
	return deref(a.EstimatedSecondsAfterPodScheduled)
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// UsageLimits are what one plugin's use of UsageEstimateArgs further requires.
type UsageLimits struct {
	// ScoreWeights: the weights make a score (LoadAware): each in 0..MaxWeight with a non-empty
	// resource name, and at least one positive when any is given. Otherwise they only order
	// (LowNodeLoad) and need only not be negative.
	ScoreWeights bool
	// ZeroNeverExpires: a nodeMetricExpirationSeconds of 0 (or unset) means metrics never expire
	// (LowNodeLoad); otherwise it must be greater than 0.
	ZeroNeverExpires bool
}

// Validate checks the args at path (their fields are children of path, as they are inline):
// scaling factors in 0..100 with non-empty resource names, a non-negative period, and the weights
// and the expiry as limits says.
func (a *UsageEstimateArgs) Validate(path *field.Path, limits UsageLimits) field.ErrorList {
	var errs field.ErrorList
	weights := path.Child("resourceWeights")
	if limits.ScoreWeights {
		errs = append(errs, ValidatePercentMap(weights, a.ResourceWeights, MaxWeight)...)
		if len(a.ResourceWeights) > 0 {
			positive := false
			for _, w := range a.ResourceWeights {
				positive = positive || w > 0
			}
			if !positive {
				errs = append(errs, field.Invalid(weights, a.ResourceWeights, "at least one weight must be positive"))
			}
		}
	} else {
		for _, name := range slices.Sorted(maps.Keys(a.ResourceWeights)) {
			if w := a.ResourceWeights[name]; w < 0 {
				errs = append(errs, field.Invalid(weights.Key(string(name)), w, "must not be negative"))
			}
		}
	}
	exp := path.Child("nodeMetricExpirationSeconds")
	switch s := a.NodeMetricExpirationSeconds; {
	case !limits.ZeroNeverExpires && deref(s) <= 0:
		errs = append(errs, field.Invalid(exp, deref(s), "must be greater than 0"))
	case limits.ZeroNeverExpires && s != nil && *s < 0:
		errs = append(errs, field.Invalid(exp, *s, "must not be negative"))
	}
	errs = append(errs, ValidatePercentMap(path.Child("estimatedScalingFactors"), a.EstimatedScalingFactors, MaxPercent)...)
	if after := a.SecondsAfterScheduled(); after < 0 {
		errs = append(errs, field.Invalid(path.Child("estimatedSecondsAfterPodScheduled"), after, "must not be negative"))
	}
	return errs
}

// ValidatePercentMap checks a resource-keyed map at path: non-empty names, values in 0..limit.
func ValidatePercentMap(path *field.Path, m map[corev1.ResourceName]int64, limit int64) field.ErrorList {
	var errs field.ErrorList
	for name, v := range m {
		p := path.Key(string(name))
		if name == "" {
			errs = append(errs, field.Invalid(p, name, "resource name must not be empty"))
			continue
		}
		if v < 0 || v > limit {
			errs = append(errs, field.Invalid(p, v, fmt.Sprintf("must be between 0 and %d", limit)))
		}
	}
	return errs
}

// Following declares how a descheduler plugin's args follow a scheduler plugin's args (the same
// rule, enforced by both binaries) when the descheduler is given --scheduler-config-file. The
// descheduler's framework.FollowScheduler applies it: per scheduler profile that enables the
// plugin, in profile order, per field, a field the policy leaves out takes the first profile's
// value, and a field it sets (or took from an earlier profile) that differs is an error naming
// both paths.
type Following struct {
	// Scheduler is the scheduler plugin's name (its KubeSchedulerConfiguration plugin name).
	Scheduler string
	// Fields are the followed fields, in the order they are checked (and errors are listed).
	Fields []FollowedField
}

// FollowedField is one field of a Following.
type FollowedField struct {
	// Scheduler is the field's JSON name in the scheduler plugin's args.
	Scheduler string
	// Descheduler is its JSON name in the descheduler plugin's args; empty for the same name.
	Descheduler string
	// Unless names a boolean field of the descheduler's args which, when true, gives this field a
	// meaning of its own (no scheduler counterpart): it is then neither filled in nor checked.
	Unless string
	// MayDiffer: a value the policy sets is kept even when it differs (the field only orders);
	// one left out is still filled in.
	MayDiffer bool
	// PositiveEntries: maps compare by their positive entries only (a zero entry, like a missing
	// one, means nothing).
	PositiveEntries bool
	// Caps names a resource-keyed field of the descheduler's args which, when the policy leaves
	// it out too, is filled with its defaults for the resources of this field, each capped at
	// this field's value (resources without a default are left for the policy to set).
	Caps string
}

// Own is the field's JSON name in the descheduler's args.
func (f FollowedField) Own() string {
	if f.Descheduler != "" {
		return f.Descheduler
	}
	return f.Scheduler
}

// The names of the rules both binaries enforce, declared once: each is the scheduler plugin's name
// (in KubeSchedulerConfiguration profiles and the Followings below) and, where the descheduler's
// plugin for the rule has the same name, the descheduler plugin's.
const (
	// NodeCRDResourceFitName names the CR fit rule (accord-scheduler's and accord-descheduler's
	// NodeCRDResourceFit).
	NodeCRDResourceFitName = "NodeCRDResourceFit"
	// LoadAwareName names accord-scheduler's LoadAware, which the descheduler's LowNodeLoad follows.
	LoadAwareName = "LoadAware"
)

// UsageFollowing is how the descheduler's LowNodeLoad follows the scheduler's LoadAware:
//
//	highThresholds                    = LoadAware usageThresholds (not with useDeviationThresholds)
//	nodeMetricExpirationSeconds       = LoadAware nodeMetricExpirationSeconds
//	estimatedScalingFactors           = LoadAware estimatedScalingFactors (positive entries)
//	estimatedSecondsAfterPodScheduled = LoadAware estimatedSecondsAfterPodScheduled
//
// resourceWeights, when left out, are LoadAware's too (they only order nodes and pods, so another
// explicit value is allowed), and lowThresholds, when left out with highThresholds, are
// LowNodeLoad's defaults capped at the scheduler's thresholds. With useDeviationThresholds the
// thresholds are relative to the mean and have no scheduler counterpart.
var UsageFollowing = Following{
	Scheduler: LoadAwareName,
	Fields: []FollowedField{
		{Scheduler: "usageThresholds", Descheduler: "highThresholds", Unless: "useDeviationThresholds", Caps: "lowThresholds"},
		{Scheduler: "nodeMetricExpirationSeconds"},
		{Scheduler: "estimatedScalingFactors", PositiveEntries: true},
		{Scheduler: "estimatedSecondsAfterPodScheduled"},
		{Scheduler: "resourceWeights", MayDiffer: true},
	},
}

// CRFitFollowing is how the descheduler's NodeCRDResourceFit and DefaultEvictor (its nodeFit)
// follow the scheduler's NodeCRDResourceFit: missingCRPolicy is the scheduler's.
var CRFitFollowing = Following{
	Scheduler: NodeCRDResourceFitName,
	Fields:    []FollowedField{{Scheduler: "missingCRPolicy"}},
}
