package v1

import (
	"k8s.io/apimachinery/pkg/conversion"

	"github.com/accord-sched/accord/apis/config"
)

// Convert_v1_NodeCRDResourceFitArgs_To_config_NodeCRDResourceFitArgs converts the versioned args to
// the internal ones; an unset policy (only possible without defaulting) becomes
// config.DefaultMissingCRPolicy.
func Convert_v1_NodeCRDResourceFitArgs_To_config_NodeCRDResourceFitArgs(in *NodeCRDResourceFitArgs, out *config.NodeCRDResourceFitArgs, s conversion.Scope) error {
	if err := autoConvert_v1_NodeCRDResourceFitArgs_To_config_NodeCRDResourceFitArgs(in, out, s); err != nil {
		return err
	}
	out.MissingCRPolicy = config.DefaultMissingCRPolicy
	if in.MissingCRPolicy != nil {
		out.MissingCRPolicy = config.MissingCRPolicy(*in.MissingCRPolicy)
	}
	return nil
}

// Convert_config_NodeCRDResourceFitArgs_To_v1_NodeCRDResourceFitArgs converts the internal args to
// the versioned ones.
func Convert_config_NodeCRDResourceFitArgs_To_v1_NodeCRDResourceFitArgs(in *config.NodeCRDResourceFitArgs, out *NodeCRDResourceFitArgs, s conversion.Scope) error {
	if err := autoConvert_config_NodeCRDResourceFitArgs_To_v1_NodeCRDResourceFitArgs(in, out, s); err != nil {
		return err
	}
	p := MissingCRPolicy(in.MissingCRPolicy)
	out.MissingCRPolicy = &p
	return nil
}
