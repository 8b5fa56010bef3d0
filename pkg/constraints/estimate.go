package constraints

import (
	"encoding/json"
	"math"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
)

// EstimatedUsageAnnotation, on a pod, overrides the estimate of its usage for the resources it names:
// a JSON object of quantities, e.g. {"cpu":"800m","memory":"256Mi"}. A pod whose owner knows that it
// uses more (or less) than it requests says so here.
const EstimatedUsageAnnotation = "accord.dev/estimated-usage"

// The usage estimated for a pod that neither requests nor limits a resource, before scaling (the
// values Koordinator and kube-scheduler's scoring assume for such pods).
const (
	DefaultEstimatedMilliCPU    int64 = 250
	DefaultEstimatedMemoryBytes int64 = 200 * 1024 * 1024
)

// ResourceFactor is how much of a pod's request (or limit, when larger) an estimate counts for one
// resource, in percent.
type ResourceFactor struct {
	Name    corev1.ResourceName
	Percent int64
}

// UsageEstimator is the one estimate of a node's usage between two reports, shared by the
// scheduler's LoadAware plugin (Filter and Score, and so the descheduler's simulation, which runs
// it) and the descheduler's LowNodeLoad plugin. A node's estimated usage is
//
//	reported node usage
//	+ for each pod on the node the report cannot include yet: its estimate − its reported usage, if any
//	− the reported usage of each pod in the report that is no longer on the node
//
// where a pod "the report cannot include yet" is one that is missing from the report's podsUsage, or
// was assigned to the node (its PodScheduled condition) after the report's window began (updateTime
// minus the metric's reportIntervalSeconds), or less than ForceAfterScheduled ago. For such a pod
// that the report does list, the larger of its estimate and its reported usage counts. A pod that
// is terminating, or has finished, is no longer on the node.
//
// A pod's estimate of a resource is Percent percent of the larger of its request and its limit (as
// Kubernetes computes them for the whole pod); a pod that neither requests nor limits cpu or memory
// counts DefaultEstimatedMilliCPU or DefaultEstimatedMemoryBytes before scaling; the pod's
// EstimatedUsageAnnotation, when it names the resource, replaces the estimate (unscaled). Only the
// resources with a factor above zero are estimated and corrected; the others keep the reported
// usage. A nil UsageEstimator estimates nothing: the reported usage stands, as without estimates.
//
// Bounds, so that what a pod's owner writes cannot make its node look empty or full: a limit above
// the node's allocatable of the resource can never be reached and is ignored (the request counts:
// limits.memory: 100Pi on a pod requesting 100Mi estimates 100Mi × factor); the request and the
// annotation are clamped to the node's allocatable (to MaxEstimate when the node has none), and an
// estimate is never negative; sums saturate instead of overflowing. An annotation above its clamp is
// reported once per pod and resource (OnAnnotationClamped).
//
// A UsageEstimator is safe for concurrent use; set OnAnnotationClamped before sharing it.
type UsageEstimator struct {
	factors []ResourceFactor
	force   time.Duration
	// onClamped, when set, is told of a pod's annotation above its clamp, once per pod and
	// resource (while clamped holds it).
	onClamped func(pod *corev1.Pod, name corev1.ResourceName, annotated, clamp float64)
	clamped   *onceSet
}

// MaxEstimate bounds a pod's estimate of a resource its node has no allocatable of, in the
// resource's unit (2^52: exact in a float64, and a thousand times it still fits an int64).
const MaxEstimate = float64(1 << 52)

// OnAnnotationClamped makes the estimator call f the first time it clamps a pod's
// EstimatedUsageAnnotation of a resource to its node's allocatable (the binaries log it once
// instead of at each cycle). It returns e; call it before e is shared.
func (e *UsageEstimator) OnAnnotationClamped(f func(pod *corev1.Pod, name corev1.ResourceName, annotated, clamp float64)) *UsageEstimator {
	if e != nil {
		e.onClamped, e.clamped = f, &onceSet{}
	}
	return e
}

// maxOnce bounds an onceSet: a full set is forgotten and starts again (a pod clamped before may then
// be reported once more).
const maxOnce = 1 << 14

// onceSet remembers the (pod, resource) pairs already reported.
type onceSet struct {
	mu   sync.Mutex
	seen map[onceKey]struct{}
}

type onceKey struct {
	uid  types.UID
	name corev1.ResourceName
}

// first reports whether k is new, and remembers it.
func (o *onceSet) first(k onceKey) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.seen[k]; ok {
		return false
	}
	if o.seen == nil || len(o.seen) >= maxOnce {
		o.seen = map[onceKey]struct{}{}
	}
	o.seen[k] = struct{}{}
	return true
}

// NewUsageEstimator returns the estimator for factors (resources with Percent zero or less are
// left out) and forceAfterScheduled; nil (no estimates) when no factor is above zero.
func NewUsageEstimator(factors []ResourceFactor, forceAfterScheduled time.Duration) *UsageEstimator {
	e := &UsageEstimator{force: forceAfterScheduled}
	for _, f := range factors {
		if f.Percent > 0 {
			e.factors = append(e.factors, f)
		}
	}
	if len(e.factors) == 0 {
		return nil
	}
	return e
}

// Adjustment is what the estimate changes in one node's reported usage: per estimated resource, the
// amount to add (negative: to take away). The zero Adjustment changes nothing.
type Adjustment struct {
	// delta is in thousandths of the resource's unit, so that sums do not depend on the order of
	// the pods (the scheduler and the descheduler list them differently).
	delta []milliValue
	// Estimated is the number of pods counted by their estimate, Departed the number of reported
	// pods counted as gone.
	Estimated, Departed int
	// until is when, in Unix nanoseconds, a pod's ForceAfterScheduled period ends and the
	// adjustment may change without any change of the pods or the report; 0 for never.
	until int64
}

// Delta returns the amount added to the resource's reported usage.
func (a *Adjustment) Delta(name corev1.ResourceName) float64 {
	if a == nil {
		return 0
	}
	for _, d := range a.delta {
		if d.name == name {
			return float64(d.milli) / 1000
		}
	}
	return 0
}

type milliValue struct {
	name  corev1.ResourceName
	milli int64
}

// toMilli converts v to thousandths, saturating at the int64 bounds (NaN is 0).
func toMilli(v float64) int64 {
	m := math.Round(v * 1000)
	switch {
	case m != m:
		return 0
	case m >= math.MaxInt64:
		return math.MaxInt64
	case m <= math.MinInt64:
		return math.MinInt64
	}
	return int64(m)
}

// addSat is a+b saturating at the int64 bounds.
func addSat(a, b int64) int64 {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && s >= 0:
		return math.MinInt64
	}
	return s
}

// ValidAt reports whether the adjustment computed earlier still holds at now for the same pods and
// report.
func (a *Adjustment) ValidAt(now time.Time) bool {
	return HoldsUntil(a.until, now)
}

// Until returns when, in Unix nanoseconds, the adjustment stops holding at ValidAt (0: never).
func (a *Adjustment) Until() int64 { return a.until }

// HoldsUntil is ValidAt for an adjustment whose Until is until, for a caller that keeps only that.
func HoldsUntil(until int64, now time.Time) bool {
	return until == 0 || now.UnixNano() < until
}

// Move adds (sign +1) or takes away (sign -1) a pod's usage, as when a planned eviction moves the
// pod off the node or onto it. Resources the adjustment does not estimate are added too.
func (a *Adjustment) Move(usage corev1.ResourceList, sign float64) {
	for name, q := range usage {
		a.add(name, sign*q.AsApproximateFloat64())
	}
}

func (a *Adjustment) add(name corev1.ResourceName, v float64) {
	m := toMilli(v)
	for i := range a.delta {
		if a.delta[i].name == name {
			a.delta[i].milli = addSat(a.delta[i].milli, m)
			return
		}
	}
	a.delta = append(a.delta, milliValue{name: name, milli: m})
}

// Clone returns a copy that Move can change without changing a.
func (a Adjustment) Clone() Adjustment {
	a.delta = append([]milliValue(nil), a.delta...)
	return a
}

// PodEstimate returns the pod's estimated usage of the resource on a node with allocatable (see
// UsageEstimator), and false when the estimator does not estimate it.
func (e *UsageEstimator) PodEstimate(pod *corev1.Pod, name corev1.ResourceName, allocatable corev1.ResourceList) (float64, bool) {
	if e == nil {
		return 0, false
	}
	for _, f := range e.factors {
		if f.Name == name {
			return e.podEstimate(pod, f, nil, nil, clampOf(allocatable, name)), true
		}
	}
	return 0, false
}

// clampOf is the most a pod's estimate of the resource may be on a node with allocatable.
func clampOf(allocatable corev1.ResourceList, name corev1.ResourceName) float64 {
	if q, ok := allocatable[name]; ok {
		if v := q.AsApproximateFloat64(); v > 0 && v < MaxEstimate {
			return v
		}
	}
	return MaxEstimate
}

// bounded is v within [0, limit]; NaN is 0.
func bounded(v, limit float64) float64 {
	if !(v > 0) {
		return 0
	}
	return min(v, limit)
}

func (e *UsageEstimator) podEstimate(pod *corev1.Pod, f ResourceFactor, requests, limits corev1.ResourceList, limit float64) float64 {
	if v, ok := annotatedUsage(pod)[f.Name]; ok {
		a := v.AsApproximateFloat64()
		if a > limit && e.onClamped != nil && e.clamped.first(onceKey{uid: pod.UID, name: f.Name}) {
			e.onClamped(pod, f.Name, a, limit)
		}
		return bounded(a, limit)
	}
	if requests == nil {
		requests = resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
		limits = resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	}
	// A limit above the node's allocatable can never be reached and says nothing about the pod's
	// use: it is ignored, and the request counts.
	base := quantity(requests, f.Name)
	if l := quantity(limits, f.Name); l > base && l <= limit {
		base = l
	}
	if base <= 0 {
		switch f.Name {
		case corev1.ResourceCPU:
			base = float64(DefaultEstimatedMilliCPU) / 1000
		case corev1.ResourceMemory:
			base = float64(DefaultEstimatedMemoryBytes)
		}
	}
	// A factor is a percentage (validated to at most 100 by both binaries' args); bounded keeps a
	// larger one within the clamp too.
	return bounded(bounded(base, limit)*float64(f.Percent)/100, limit)
}

func quantity(l corev1.ResourceList, name corev1.ResourceName) float64 {
	q, ok := l[name]
	if !ok {
		return 0
	}
	return q.AsApproximateFloat64()
}

// annotatedUsage is the pod's EstimatedUsageAnnotation; a missing or unreadable annotation gives
// nil (ValidateEstimatedUsage reports why it is unreadable).
func annotatedUsage(pod *corev1.Pod) corev1.ResourceList {
	v, ok := pod.Annotations[EstimatedUsageAnnotation]
	if !ok {
		return nil
	}
	l, err := ParseEstimatedUsage(v)
	if err != nil {
		return nil
	}
	return l
}

// ParseEstimatedUsage reads an EstimatedUsageAnnotation value: a JSON object of non-negative
// quantities.
func ParseEstimatedUsage(v string) (corev1.ResourceList, error) {
	var raw map[corev1.ResourceName]resource.Quantity
	if err := json.Unmarshal([]byte(v), &raw); err != nil {
		return nil, err
	}
	for name, q := range raw {
		if q.Sign() < 0 {
			return nil, &json.UnsupportedValueError{Str: string(name) + " is negative"}
		}
	}
	return raw, nil
}

// Gone reports whether a pod bound to a node no longer counts on it: it is terminating or finished.
func Gone(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// AssignedAt returns when the pod was assigned to its node: the time of its PodScheduled condition,
// or false when it has none (a pod the scheduler has assumed and not yet bound, or one created with
// its node set).
func AssignedAt(pod *corev1.Pod) (time.Time, bool) {
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}

// Adjust returns the adjustment of the node's reported usage l (its compiled NodeMetric) for the
// pods bound to it, which pod(i) returns for i in [0, n), at now; allocatable is the node's, which
// bounds each pod's estimate. A nil estimator or a nil Load gives the zero Adjustment.
func (e *UsageEstimator) Adjust(l *Load, allocatable corev1.ResourceList, n int, pod func(i int) *corev1.Pod, now time.Time) Adjustment {
	var a Adjustment
	if e == nil || l == nil {
		return a
	}
	var limitsBuf [4]float64
	limits := limitsBuf[:0]
	for _, f := range e.factors {
		limits = append(limits, clampOf(allocatable, f.Name))
	}
	windowStart := l.updated - l.window
	var present []bool
	if len(l.pods) > 0 {
		present = make([]bool, len(l.pods))
	}
	for i := range n {
		p := pod(i)
		if p == nil || Gone(p) {
			continue
		}
		var reported podUsage
		at, inReport := l.podIndex[podKey{namespace: p.Namespace, name: p.Name}]
		if inReport {
			present[at] = true
			reported = l.pods[at].usage
		}
		recent := !inReport
		if at, ok := AssignedAt(p); ok {
			ns := at.UnixNano()
			if !l.hasUpdated || ns > windowStart {
				recent = true
			}
			if e.force > 0 && now.UnixNano()-ns < int64(e.force) {
				recent = true
				if end := ns + int64(e.force); a.until == 0 || end < a.until {
					a.until = end
				}
			}
		}
		if !recent {
			continue
		}
		a.Estimated++
		var requests, podLimits corev1.ResourceList
		for j, f := range e.factors {
			if requests == nil {
				requests = resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
				podLimits = resourcehelper.PodLimits(p, resourcehelper.PodResourcesOptions{})
			}
			est := e.podEstimate(p, f, requests, podLimits, limits[j])
			rep, _ := reported.used(f.Name)
			a.add(f.Name, max(est, rep)-rep)
		}
	}
	for i, reported := range l.pods {
		if present[i] {
			continue
		}
		a.Departed++
		for _, f := range e.factors {
			if rep, ok := reported.usage.used(f.Name); ok {
				a.add(f.Name, -rep)
			}
		}
	}
	return a
}

type podKey struct{ namespace, name string }

// reportedPod is one pod of a NodeMetric's podsUsage.
type reportedPod struct {
	key   podKey
	usage podUsage
}

// podUsage is one pod's reported usage.
type podUsage []namedValue

func (u podUsage) used(name corev1.ResourceName) (float64, bool) {
	for _, v := range u {
		if v.name == name {
			return v.value, true
		}
	}
	return 0, false
}
