package removepodsviolatingnodeaffinity

// SetDefaults_RemovePodsViolatingNodeAffinityArgs sets nothing: as upstream, nodeAffinityType must be
// given.
func SetDefaults_RemovePodsViolatingNodeAffinityArgs(*RemovePodsViolatingNodeAffinityArgs) {}

// SetDefaults implements framework.ArgsDefaulter.
func (a *RemovePodsViolatingNodeAffinityArgs) SetDefaults() {
	SetDefaults_RemovePodsViolatingNodeAffinityArgs(a)
}
