package removeduplicates

// SetDefaults_RemoveDuplicatesArgs: every field's zero value is its default.
func SetDefaults_RemoveDuplicatesArgs(*RemoveDuplicatesArgs) {}

// SetDefaults implements framework.ArgsDefaulter.
func (a *RemoveDuplicatesArgs) SetDefaults() { SetDefaults_RemoveDuplicatesArgs(a) }
