// Package decision is the typed, versioned record of one eviction decision of the descheduler: the
// pod, the plugin and profile that nominated it, the verdict, what held it, the placement judges'
// predictions and the reservation its replacement was given. The descheduler writes it, as JSON, in
// the Annotation of the Event it records on the pod; the console reads it from there (never from the
// Event's note, which is for people). It depends on nothing but the standard library, so that every
// reader can import it.
package decision

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Annotation is the Event annotation that holds a Decision as JSON.
const Annotation = "descheduler.accord.dev/decision"

// Version is the version of the Decision this package writes and reads.
const Version = "v1"

// ReportingController is the reportingController of the descheduler's Events: a reader trusts a
// decision only on an Event that names it (an Event's author chooses its fields, so the reader also
// links a decision to a pod only within the Event's namespace).
const ReportingController = "accord-descheduler"

// MaxSize bounds the JSON a reader decodes.
const MaxSize = 16 << 10

// Verdicts.
const (
	// VerdictEvicted: evicted through the evict plugin (the Eviction API, reservation-first or not).
	VerdictEvicted = "Evicted"
	// VerdictSoftEvicted: annotated for its controller to move (evictionMode Soft).
	VerdictSoftEvicted = "SoftEvicted"
	// VerdictInBackground: its controller took the eviction in background.
	VerdictInBackground = "InBackground"
	// VerdictHeld: nominated and not evicted; Blocker says what held it.
	VerdictHeld = "Held"
)

// Decision is one eviction decision on one pod.
type Decision struct {
	// Version is Version.
	Version string `json:"version"`
	Pod     Pod    `json:"pod"`
	// Plugin nominated the pod in profile Profile, for Reason.
	Plugin  string `json:"plugin"`
	Profile string `json:"profile"`
	Reason  string `json:"reason,omitempty"`
	Verdict string `json:"verdict"`
	// Blocker is what held the pod (VerdictHeld only).
	Blocker *Blocker `json:"blocker,omitempty"`
	// Predictions are the placement judges' (SchedulerSimulation's) predictions for the pod's
	// replacement, one per judge that admitted it with one, in the profile's order.
	Predictions []Prediction `json:"predictions,omitempty"`
	// Reservation is where the replacement's room was reserved before the eviction (ReservationFirst).
	Reservation *Reservation `json:"reservation,omitempty"`
	// RequestedAt is when the evictor asked the evict plugin (or soft-evicted): the pod's controller
	// creates its replacement only after that, while the Event is recorded once the eviction
	// returned, which may be later than the replacement's creation (not set for VerdictHeld).
	RequestedAt *time.Time `json:"requestedAt,omitempty"`
}

// Pod is the pod a decision is about.
type Pod struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	// Node is the node it ran on.
	Node string `json:"node,omitempty"`
	// Controller is the pod's controller (its controller owner reference), whose replacement pod
	// a reader looks for once the pod is gone.
	Controller *Controller `json:"controller,omitempty"`
}

// Controller is the controller of a pod.
type Controller struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	UID  string `json:"uid"`
}

// Blocker is the gate that held a pod: Gate is one of the evictor's gates ("workload budget",
// "eviction window") and Message its refusal.
type Blocker struct {
	Gate    string `json:"gate"`
	Message string `json:"message,omitempty"`
}

// Prediction is one placement judge's prediction for a replacement.
type Prediction struct {
	// Judge is the preEvictionFilter plugin that predicted.
	Judge string `json:"judge"`
	// SchedulerProfile is the scheduler profile the pod was simulated with.
	SchedulerProfile string `json:"schedulerProfile,omitempty"`
	// Node is the node predicted for the replacement and Score its score; "" and nil when the judge
	// admitted the pod without a feasible prediction (a pod-intrinsic nomination).
	Node  string `json:"node,omitempty"`
	Score *int64 `json:"score,omitempty"`
	// CurrentNode is the pod's node and CurrentNodeScore its score when the pod fits there.
	CurrentNode      string `json:"currentNode,omitempty"`
	CurrentNodeScore *int64 `json:"currentNodeScore,omitempty"`
	// Message is the judge's words for the pod's Event.
	Message string `json:"message,omitempty"`
}

// Moves reports whether the prediction places the replacement on another node.
func (p Prediction) Moves() bool { return p.Node != "" && p.Node != p.CurrentNode }

// Reservation is the reservation placed for a replacement before its pod was evicted.
type Reservation struct {
	Name string `json:"name"`
	Node string `json:"node,omitempty"`
}

// Predicted returns the first prediction that moves the replacement, else the first with a node.
func (d Decision) Predicted() (Prediction, bool) {
	for _, p := range d.Predictions {
		if p.Moves() {
			return p, true
		}
	}
	for _, p := range d.Predictions {
		if p.Node != "" {
			return p, true
		}
	}
	return Prediction{}, false
}

var verdicts = map[string]bool{VerdictEvicted: true, VerdictSoftEvicted: true, VerdictInBackground: true, VerdictHeld: true}

// Validate reports the first field of d that is missing or out of range.
func (d Decision) Validate() error {
	switch {
	case d.Version != Version:
		return fmt.Errorf("version: %q is not %q", d.Version, Version)
	case d.Pod.Namespace == "" || d.Pod.Name == "":
		return errors.New("pod: namespace and name are required")
	case d.Pod.Controller != nil && d.Pod.Controller.UID == "":
		return errors.New("pod.controller.uid: required")
	case d.Plugin == "":
		return errors.New("plugin: required")
	case !verdicts[d.Verdict]:
		return fmt.Errorf("verdict: %q is not one of Evicted, SoftEvicted, InBackground, Held", d.Verdict)
	case (d.Verdict == VerdictHeld) != (d.Blocker != nil):
		return fmt.Errorf("blocker: set for verdict Held only (verdict %s)", d.Verdict)
	case d.Blocker != nil && d.Blocker.Gate == "":
		return errors.New("blocker.gate: required")
	case d.Reservation != nil && d.Reservation.Name == "":
		return errors.New("reservation.name: required")
	}
	for i, p := range d.Predictions {
		if p.Judge == "" {
			return fmt.Errorf("predictions[%d].judge: required", i)
		}
		if (p.Node == "") != (p.Score == nil) {
			return fmt.Errorf("predictions[%d]: node and score go together", i)
		}
	}
	return nil
}

// Marshal validates d and returns its JSON (at most MaxSize bytes, which readers accept).
func Marshal(d Decision) (string, error) {
	if err := d.Validate(); err != nil {
		return "", err
	}
	b, err := json.Marshal(d)
	if err != nil {
		return "", err
	}
	if len(b) > MaxSize {
		return "", fmt.Errorf("%d bytes, more than %d", len(b), MaxSize)
	}
	return string(b), nil
}

// Unmarshal decodes and validates a Decision: strictly (an unknown field, anything after the value
// or a version other than Version is an error), and at most MaxSize bytes.
func Unmarshal(s string) (Decision, error) {
	if len(s) > MaxSize {
		return Decision{}, fmt.Errorf("%d bytes, more than %d", len(s), MaxSize)
	}
	var probe struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal([]byte(s), &probe); err != nil {
		return Decision{}, err
	}
	if probe.Version != Version {
		return Decision{}, fmt.Errorf("version: %q is not %q", probe.Version, Version)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	var d Decision
	if err := dec.Decode(&d); err != nil {
		return Decision{}, err
	}
	if err := d.Validate(); err != nil {
		return Decision{}, err
	}
	return d, nil
}
