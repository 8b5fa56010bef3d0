package v1alpha2

import "slices"

const (
	// DefaultEvictorName is the evictor plugin added to a profile's filter and preEvictionFilter
	// extension points when the profile names none.
	DefaultEvictorName = "DefaultEvictor"
	// DefaultEvictName is the plugin that performs evictions when a profile's evict extension point
	// names none: the policy/v1 Eviction API.
	DefaultEvictName = "EvictionAPI"
	// SchedulerSimulationName is the preEvictionFilter plugin every profile gets unless it disables
	// it: it admits an eviction only if the scheduler, simulated, would place the replacement
	// elsewhere (the no-flap guarantee).
	SchedulerSimulationName = "SchedulerSimulation"
)

// SetDefaults_DeschedulerProfile enables DefaultEvictor at the filter and preEvictionFilter extension
// points of a profile that enables no evictor plugin at either, unless DefaultEvictor is explicitly
// disabled there. SchedulerSimulation (the no-flap guarantee) is enabled at preEvictionFilter, after
// the profile's own plugins, in every profile — also one that lists its evictor plugins, as upstream
// policies do — unless it is disabled there by name or by "*"
// (`preEvictionFilter: {disabled: [SchedulerSimulation]}`). It names the Eviction-API evictor at the
// evict extension point when none is.
func SetDefaults_DeschedulerProfile(obj *DeschedulerProfile) {
	p := &obj.Plugins
	if len(p.Filter.Enabled) == 0 && len(p.PreEvictionFilter.Enabled) == 0 {
		if !slices.Contains(p.Filter.Disabled, DefaultEvictorName) {
			p.Filter.Enabled = append(p.Filter.Enabled, DefaultEvictorName)
		}
		if !slices.Contains(p.PreEvictionFilter.Disabled, DefaultEvictorName) {
			p.PreEvictionFilter.Enabled = append(p.PreEvictionFilter.Enabled, DefaultEvictorName)
		}
	}
	if !slices.Contains(p.PreEvictionFilter.Enabled, SchedulerSimulationName) &&
		!slices.Contains(p.PreEvictionFilter.Disabled, SchedulerSimulationName) &&
		!slices.Contains(p.PreEvictionFilter.Disabled, "*") {
		p.PreEvictionFilter.Enabled = append(p.PreEvictionFilter.Enabled, SchedulerSimulationName)
	}
	if len(p.Evict.Enabled) == 0 && !slices.Contains(p.Evict.Disabled, DefaultEvictName) {
		p.Evict.Enabled = append(p.Evict.Enabled, DefaultEvictName)
	}
}
