package podlifetime

// SetDefaults_PodLifeTimeArgs sets nothing: as upstream, the criteria (maxPodLifeTimeSeconds,
// states, conditions, exitCodes) must be given.
func SetDefaults_PodLifeTimeArgs(*PodLifeTimeArgs) {}

// SetDefaults implements framework.ArgsDefaulter.
func (a *PodLifeTimeArgs) SetDefaults() { SetDefaults_PodLifeTimeArgs(a) }
