package removefailedpods

// SetDefaults_RemoveFailedPodsArgs: every field's zero value is its default (every failed pod).
func SetDefaults_RemoveFailedPodsArgs(*RemoveFailedPodsArgs) {}

// SetDefaults implements framework.ArgsDefaulter.
func (a *RemoveFailedPodsArgs) SetDefaults() { SetDefaults_RemoveFailedPodsArgs(a) }
