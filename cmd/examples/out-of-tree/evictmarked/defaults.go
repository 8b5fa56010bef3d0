package evictmarked

// DefaultLabelKey is the label that marks a pod for eviction.
const DefaultLabelKey = "accord.dev/evict"

// SetDefaults implements framework.ArgsDefaulter.
func (a *EvictMarkedArgs) SetDefaults() {
	if a.LabelKey == "" {
		a.LabelKey = DefaultLabelKey
	}
}
