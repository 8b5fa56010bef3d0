package framework

import (
	"fmt"

	"github.com/accord-sched/accord/apis/config"
	"github.com/accord-sched/accord/pkg/crdcheck"
)

// RequireCRD returns a *crdcheck.MissingError naming crd and the plugin when the cluster does not
// serve crd (Handle.ServesCRD). A plugin that cannot work without the CRD calls it first in its
// factory, so the descheduler fails at start with an error that says what to install instead of
// waiting for an informer that can never sync.
func RequireCRD(h Handle, crd crdcheck.CRD, plugin string) error {
	if h.ServesCRD(crd) {
		return nil
	}
	return &crdcheck.MissingError{CRD: crd, Needer: fmt.Sprintf("plugin %q (profile %q)", plugin, h.ProfileName())}
}

// MissingCRPolicyArgs is implemented by the args of plugins that judge nodes without a
// ClusterScopedResource (DefaultEvictor's nodeFit, NodeCRDResourceFit): the profile's
// missingCRPolicy (Handle.MissingCRPolicy) is theirs, and the runtime refuses a profile whose
// plugins disagree on it.
type MissingCRPolicyArgs interface {
	MissingCRPolicyArg() config.MissingCRPolicy
}
