package v1alpha2

import "slices"

const (
	// DefaultEvictorName is the evictor plugin added to a profile's filter and preEvictionFilter
	// extension points when the profile names none.
	DefaultEvictorName = "DefaultEvictor"
	// DefaultEvictName is the plugin that performs evictions when a profile's evict extension point
	// names none: the policy/v1 Eviction API.
	DefaultEvictName = "EvictionAPI"
	// SchedulerSimulationName is the preEvictionFilter plugin added after DefaultEvictor when
	// DefaultEvictor is added by default: it admits an eviction only if the scheduler, simulated,
	// would place the replacement elsewhere (the no-flap guarantee).
	SchedulerSimulationName = "SchedulerSimulation"
)

// SetDefaults_DeschedulerProfile enables DefaultEvictor at the filter and preEvictionFilter extension
// points of a profile that enables no evictor plugin at either, unless DefaultEvictor is explicitly
// disabled there, and then SchedulerSimulation after it at preEvictionFilter, unless
// SchedulerSimulation is disabled there (`preEvictionFilter: {disabled: [SchedulerSimulation]}`).
// A profile that names its evictor plugins gets exactly those. It names the Eviction-API evictor at
// the evict extension point when none is.
func SetDefaults_DeschedulerProfile(obj *DeschedulerProfile) {
	p := &obj.Plugins
	if len(p.Filter.Enabled) == 0 && len(p.PreEvictionFilter.Enabled) == 0 {
		if !slices.Contains(p.Filter.Disabled, DefaultEvictorName) {
			p.Filter.Enabled = append(p.Filter.Enabled, DefaultEvictorName)
		}
		if !slices.Contains(p.PreEvictionFilter.Disabled, DefaultEvictorName) {
			p.PreEvictionFilter.Enabled = append(p.PreEvictionFilter.Enabled, DefaultEvictorName)
		}
		if !slices.Contains(p.PreEvictionFilter.Disabled, SchedulerSimulationName) && !slices.Contains(p.PreEvictionFilter.Disabled, "*") {
			p.PreEvictionFilter.Enabled = append(p.PreEvictionFilter.Enabled, SchedulerSimulationName)
		}
	}
	if len(p.Evict.Enabled) == 0 && !slices.Contains(p.Evict.Disabled, DefaultEvictName) {
		p.Evict.Enabled = append(p.Evict.Enabled, DefaultEvictName)
	}
}
