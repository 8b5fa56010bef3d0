package constraints

import (
	corev1 "k8s.io/api/core/v1"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
)

// CRFit is the ClusterScopedResource rule's verdict for one pod on one node: the one verdict
// accord-scheduler's NodeCRDResourceFit Filter, the descheduler's NodeCRDResourceFit and the
// DefaultEvictor's nodeFit all act on.
type CRFit struct {
	// Rejected is true when the pod may not run on the node.
	Rejected bool
	// NoCR is true when the node has no ClusterScopedResource (rejected under missingCRPolicy
	// Reject, let through under Ignore).
	NoCR bool
	// Missing is the first requested resource the node's ClusterScopedResource does not enable.
	Missing corev1.ResourceName
}

// noCR is the missing-CR rule, the one place it is written: a node without a ClusterScopedResource
// is rejected (missingCRPolicy Reject, the default) whatever the pod requests, unless ignoreMissing
// (missingCRPolicy Ignore) lets it through. The policy comes in as a bool so that this package
// imports no configuration types.
func noCR(ignoreMissing bool) CRFit {
	return CRFit{NoCR: true, Rejected: !ignoreMissing}
}

// FitCR is the rule on the ClusterScopedResource itself (nil: the node has none).
func FitCR(csr *schedv1alpha1.ClusterScopedResource, requested []corev1.ResourceName, ignoreMissing bool) CRFit {
	if csr == nil {
		return noCR(ignoreMissing)
	}
	missing, ok := MissingResource(csr, requested)
	return CRFit{Rejected: ok, Missing: missing}
}

// Fit is FitCR for the compiled CR (a nil Offer: the node has none).
func (o *Offer) Fit(requested []corev1.ResourceName, ignoreMissing bool) CRFit {
	if o == nil {
		return noCR(ignoreMissing)
	}
	missing, ok := o.MissingResource(requested)
	return CRFit{Rejected: ok, Missing: missing}
}

// FitCRAnyScheduler is FitCR for a pod that accord-scheduler may not be the one to place: the
// descheduler's nodeFit judges pods of every scheduler (kube-scheduler's profiles have no
// NodeCRDResourceFit). It is the scheduler's rule with one exception, written here only: a pod that
// requests nothing fits a node without a ClusterScopedResource, as it needs nothing one could
// enable.
func FitCRAnyScheduler(csr *schedv1alpha1.ClusterScopedResource, requested []corev1.ResourceName, ignoreMissing bool) CRFit {
	v := FitCR(csr, requested, ignoreMissing)
	if v.NoCR && len(requested) == 0 {
		v.Rejected = false
	}
	return v
}

// Reason is the verdict in words, the one wording the descheduler's nodeFit, NodeCRDResourceFit and
// their Events use: "" when the pod may run on the node.
func (v CRFit) Reason() string {
	switch {
	case !v.Rejected:
		return ""
	case v.NoCR:
		return "node has no ClusterScopedResource"
	default:
		return "ClusterScopedResource does not enable " + string(v.Missing)
	}
}
