package podlifetime

// DefaultMaxPodLifeTimeSeconds is one day.
const DefaultMaxPodLifeTimeSeconds int64 = 86400

// SetDefaults implements framework.ArgsDefaulter.
func (a *PodLifeTimeArgs) SetDefaults() {
	if a.MaxPodLifeTimeSeconds == nil {
		v := DefaultMaxPodLifeTimeSeconds
		a.MaxPodLifeTimeSeconds = &v
	}
}
