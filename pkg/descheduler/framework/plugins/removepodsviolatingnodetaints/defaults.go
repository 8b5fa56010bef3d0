package removepodsviolatingnodetaints

// SetDefaults_RemovePodsViolatingNodeTaintsArgs: every field's zero value is its default (all
// namespaces and pods, NoSchedule taints only, no taint excluded).
func SetDefaults_RemovePodsViolatingNodeTaintsArgs(*RemovePodsViolatingNodeTaintsArgs) {}

// SetDefaults implements framework.ArgsDefaulter.
func (a *RemovePodsViolatingNodeTaintsArgs) SetDefaults() {
	SetDefaults_RemovePodsViolatingNodeTaintsArgs(a)
}
