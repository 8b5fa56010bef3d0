package nodecrdresourcefit

import "github.com/accord-sched/accord/apis/config"

// SetDefaults_NodeCRDResourceFitArgs sets missingCRPolicy to the scheduler plugin's default
// (config.DefaultMissingCRPolicy).
func SetDefaults_NodeCRDResourceFitArgs(a *NodeCRDResourceFitArgs) {
	if a.MissingCRPolicy == "" {
		a.MissingCRPolicy = config.DefaultMissingCRPolicy
	}
}

// SetDefaults implements framework.ArgsDefaulter.
func (a *NodeCRDResourceFitArgs) SetDefaults() { SetDefaults_NodeCRDResourceFitArgs(a) }
