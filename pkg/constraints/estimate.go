package constraints

import (
	"encoding/json"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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
// A UsageEstimator is immutable and safe for concurrent use.
type UsageEstimator struct {
	factors []ResourceFactor
	force   time.Duration
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

func toMilli(v float64) int64 { return int64(math.Round(v * 1000)) }

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
			a.delta[i].milli += m
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

// PodEstimate returns the pod's estimated usage of the resource (see UsageEstimator), and false when
// the estimator does not estimate it.
func (e *UsageEstimator) PodEstimate(pod *corev1.Pod, name corev1.ResourceName) (float64, bool) {
	if e == nil {
		return 0, false
	}
	for _, f := range e.factors {
		if f.Name == name {
			return e.podEstimate(pod, f, nil, nil), true
		}
	}
	return 0, false
}

func (e *UsageEstimator) podEstimate(pod *corev1.Pod, f ResourceFactor, requests, limits corev1.ResourceList) float64 {
	if v, ok := annotatedUsage(pod)[f.Name]; ok {
		return v.AsApproximateFloat64()
	}
	if requests == nil {
		requests = resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
		limits = resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	}
	base := max(quantity(requests, f.Name), quantity(limits, f.Name))
	if base <= 0 {
		switch f.Name {
		case corev1.ResourceCPU:
			base = float64(DefaultEstimatedMilliCPU) / 1000
		case corev1.ResourceMemory:
			base = float64(DefaultEstimatedMemoryBytes)
		}
	}
	return base * float64(f.Percent) / 100
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
// pods bound to it, which pod(i) returns for i in [0, n), at now. A nil estimator or a nil Load
// gives the zero Adjustment.
func (e *UsageEstimator) Adjust(l *Load, n int, pod func(i int) *corev1.Pod, now time.Time) Adjustment {
	var a Adjustment
	if e == nil || l == nil {
		return a
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
		var requests, limits corev1.ResourceList
		for _, f := range e.factors {
			if requests == nil {
				requests = resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
				limits = resourcehelper.PodLimits(p, resourcehelper.PodResourcesOptions{})
			}
			est := e.podEstimate(p, f, requests, limits)
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
