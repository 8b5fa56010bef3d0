package removepodshavingtoomanyrestarts

// SetDefaults_RemovePodsHavingTooManyRestartsArgs sets nothing: as upstream, podRestartThreshold must
// be given.
func SetDefaults_RemovePodsHavingTooManyRestartsArgs(*RemovePodsHavingTooManyRestartsArgs) {}

// SetDefaults implements framework.ArgsDefaulter.
func (a *RemovePodsHavingTooManyRestartsArgs) SetDefaults() {
	SetDefaults_RemovePodsHavingTooManyRestartsArgs(a)
}
