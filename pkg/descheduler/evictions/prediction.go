package evictions

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/accord-sched/accord/pkg/descheduler/framework/decision"
)

// admissionTTL bounds how long the predictions of an admitted pod that was then not evicted (a limit
// stopped it) are kept.
const admissionTTL = 10 * time.Minute

// admissions keeps, from a pod's admission by the preEvictionFilter plugins until its eviction, what
// the PlacementJudges predicted for its replacement. The judges' own per-cycle state cannot be asked
// at the eviction: an event-triggered controller's eviction still on its way when a cycle begins
// finds it forgotten, and its Event and reservation went without the prediction (the console's
// newest eviction rows showed no predicted node).
type admissions struct {
	mu    sync.Mutex
	byUID map[types.UID]admission
	swept time.Time
}

type admission struct {
	predictions []decision.Prediction
	at          time.Time
}

// admit records pod's predictions (none: an admission without one, which replaces an older one).
func (a *admissions) admit(pod *corev1.Pod, predictions []decision.Prediction) {
	if pod.UID == "" {
		return
	}
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byUID == nil {
		a.byUID = map[types.UID]admission{}
	}
	if now.Sub(a.swept) > time.Minute {
		for uid, adm := range a.byUID {
			if now.Sub(adm.at) > admissionTTL {
				delete(a.byUID, uid)
			}
		}
		a.swept = now
	}
	a.byUID[pod.UID] = admission{predictions: predictions, at: now}
}

// of returns pod's predictions from its last admission.
func (a *admissions) of(pod *corev1.Pod) []decision.Prediction {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.byUID[pod.UID].predictions
}

// take returns pod's predictions from its last admission and forgets them (its eviction is
// decided).
func (a *admissions) take(pod *corev1.Pod) []decision.Prediction {
	a.mu.Lock()
	defer a.mu.Unlock()
	adm := a.byUID[pod.UID]
	delete(a.byUID, pod.UID)
	return adm.predictions
}

// predictedNode is the node of the first prediction that moves the replacement ("" when none).
func predictedNode(predictions []decision.Prediction) string {
	for _, p := range predictions {
		if p.Moves() {
			return p.Node
		}
	}
	return ""
}

// predictionNote is what the judges add to the Event's note: their messages, joined.
func predictionNote(predictions []decision.Prediction) string {
	note := ""
	for _, p := range predictions {
		if p.Message == "" {
			continue
		}
		if note != "" {
			note += "; "
		}
		note += p.Message
	}
	return note
}
