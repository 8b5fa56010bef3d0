package nodecrdresourcefit

import "github.com/accord-sched/accord/apis/config"

// SetDefaults_NodeCRDResourceFitArgs sets missingCRPolicy to Reject, the scheduler plugin's default.
func SetDefaults_NodeCRDResourceFitArgs(a *NodeCRDResourceFitArgs) {
	if a.MissingCRPolicy == "" {
		a.MissingCRPolicy = config.DefaultMissingCRPolicy
	}
}

// SetDefaults implements framework.ArgsDefaulter.
func (a *NodeCRDResourceFitArgs) SetDefaults() { SetDefaults_NodeCRDResourceFitArgs(a) }
