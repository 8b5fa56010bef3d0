package podlifetime

// SetDefaults_PodLifeTimeArgs sets nothing: as upstream, maxPodLifeTimeSeconds must be given.
func SetDefaults_PodLifeTimeArgs(*PodLifeTimeArgs) {}

// SetDefaults implements framework.ArgsDefaulter.
func (a *PodLifeTimeArgs) SetDefaults() { SetDefaults_PodLifeTimeArgs(a) }
