package v1

import "github.com/accord-sched/accord/apis/config"

// DefaultNodeMetricExpirationSeconds is the default NodeMetricExpirationSeconds: three minutes.
const DefaultNodeMetricExpirationSeconds = config.DefaultNodeMetricExpirationSeconds

// SetDefaults_NodeCRDResourceFitArgs sets MissingCRPolicy to config.DefaultMissingCRPolicy when it
// is unset.
func SetDefaults_NodeCRDResourceFitArgs(obj *NodeCRDResourceFitArgs) {
	if obj.MissingCRPolicy == nil {
		p := MissingCRPolicy(config.DefaultMissingCRPolicy)
		obj.MissingCRPolicy = &p
	}
}

// SetDefaults_LoadAwareArgs fills unset thresholds and the shared args
// (constraints.UsageEstimateArgs.SetDefaults). A map that is set, even to {}, is kept as written.
func SetDefaults_LoadAwareArgs(obj *LoadAwareArgs) {
	if obj.UsageThresholds == nil {
		obj.UsageThresholds = config.DefaultUsageThresholds()
	}
	obj.UsageEstimateArgs.SetDefaults()
}
