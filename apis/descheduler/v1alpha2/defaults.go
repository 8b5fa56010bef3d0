package v1alpha2

import "slices"

const (
	// DefaultEvictorName is the evictor plugin added to a profile's filter and preEvictionFilter
	// extension points when the profile names none.
	DefaultEvictorName = "DefaultEvictor"
	// DefaultEvictName is the plugin that performs evictions when a profile's evict extension point
	// names none: the policy/v1 Eviction API.
	DefaultEvictName = "EvictionAPI"
)

// SetDefaults_DeschedulerProfile enables DefaultEvictor at the filter and preEvictionFilter extension
// points of a profile that enables no evictor plugin at either, unless DefaultEvictor is explicitly
// disabled there, and names the Eviction-API evictor at the evict extension point when none is.
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
	if len(p.Evict.Enabled) == 0 && !slices.Contains(p.Evict.Disabled, DefaultEvictName) {
		p.Evict.Enabled = append(p.Evict.Enabled, DefaultEvictName)
	}
}
