package framework

// PreEvictionExplanation is what an Evictor's ExplainPreEviction says about a pod that went
// through PreEvictionFilter.
type PreEvictionExplanation struct {
	// PredictedNode is where a PlacementJudge predicted the replacement ("" when none).
	PredictedNode string
	// BlockedBy is the preEvictionFilter plugin that refused the pod ("" when none did) and Message
	// its reason (PlacementJudge.RefusalMessage), or the judges' eviction message
	// (PlacementJudge.PreEvictionFilterFor's predictions) for an admitted pod.
	BlockedBy string
	Message   string
}
