package schedulersimulation

import (
	"regexp"
	"strconv"
)

// PredictionNote is the prediction read back from an eviction Event's note (ParseEvictionMessage).
type PredictionNote struct {
	Profile string
	Node    string
	Score   int64
}

var predictionRE = regexp.MustCompile(`scheduler simulation \(profile ([^)]*)\): replacement predicted on (\S+) with score (-?\d+)`)

// ParseEvictionMessage finds the prediction EvictionMessage wrote in text (an Event note that may
// hold more); ok is false when there is none.
func ParseEvictionMessage(text string) (PredictionNote, bool) {
	m := predictionRE.FindStringSubmatch(text)
	if m == nil {
		return PredictionNote{}, false
	}
	score, err := strconv.ParseInt(m[3], 10, 64)
	if err != nil {
		return PredictionNote{}, false
	}
	return PredictionNote{Profile: m[1], Node: m[2], Score: score}, true
}
