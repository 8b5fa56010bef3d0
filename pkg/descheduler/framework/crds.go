package framework

import (
	"fmt"

	"github.com/accord-sched/accord/apis/config"
	"github.com/accord-sched/accord/pkg/crdcheck"
)

// CRDAvailability is implemented by the runtime's Handle: it tells which of Accord's CRDs the
// cluster serves, as API discovery found at start. A plugin asks (ServesCRD) before it requests an
// informer of Accord's factory, because an informer of a resource the cluster does not serve never
// syncs.
type CRDAvailability interface {
	ServesCRD(crd crdcheck.CRD) bool
}

// ServesCRD reports whether the cluster serves crd. A Handle that cannot tell (one built by a unit
// test) is taken to serve every CRD.
func ServesCRD(h Handle, crd crdcheck.CRD) bool {
	if a, ok := h.(CRDAvailability); ok {
		return a.ServesCRD(crd)
	}
	return true
}

// RequireCRD returns a *crdcheck.MissingError naming crd and the plugin when the cluster does not
// serve crd. A plugin that cannot work without the CRD calls it first in its factory, so the
// descheduler fails at start with an error that says what to install instead of waiting for an
// informer that can never sync.
func RequireCRD(h Handle, crd crdcheck.CRD, plugin string) error {
	if ServesCRD(h, crd) {
		return nil
	}
	return &crdcheck.MissingError{CRD: crd, Needer: fmt.Sprintf("plugin %q (profile %q)", plugin, h.ProfileName())}
}

// MissingCRPolicyArgs is implemented by the args of plugins that judge nodes without a
// ClusterScopedResource (DefaultEvictor's nodeFit, NodeCRDResourceFit): the profile's
// missingCRPolicy is theirs, and the runtime refuses a profile whose plugins disagree on it.
type MissingCRPolicyArgs interface {
	MissingCRPolicyArg() config.MissingCRPolicy
}

// CRPolicySource is implemented by the runtime's Handle: the profile's missingCRPolicy.
type CRPolicySource interface {
	MissingCRPolicy() config.MissingCRPolicy
}

// MissingCRPolicyOf returns the missingCRPolicy of h's profile (its plugins' args, see
// MissingCRPolicyArgs), or the default (Reject) when none sets one or h cannot tell.
func MissingCRPolicyOf(h Handle) config.MissingCRPolicy {
	if s, ok := h.(CRPolicySource); ok {
		if p := s.MissingCRPolicy(); p != "" {
			return p
		}
	}
	return config.DefaultMissingCRPolicy
}
