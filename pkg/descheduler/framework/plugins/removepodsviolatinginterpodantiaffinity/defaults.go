package removepodsviolatinginterpodantiaffinity

// SetDefaults_RemovePodsViolatingInterPodAntiAffinityArgs: every field's zero value is its default.
func SetDefaults_RemovePodsViolatingInterPodAntiAffinityArgs(*RemovePodsViolatingInterPodAntiAffinityArgs) {
}

// SetDefaults implements framework.ArgsDefaulter.
func (a *RemovePodsViolatingInterPodAntiAffinityArgs) SetDefaults() {
	SetDefaults_RemovePodsViolatingInterPodAntiAffinityArgs(a)
}
