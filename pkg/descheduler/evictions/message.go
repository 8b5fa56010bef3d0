package evictions

import (
	"fmt"
	"regexp"
)

// maxEventNote is the longest note an Event accepts (1 kB).
const maxEventNote = 1024

// EventMessage is the note of the Descheduled Event recorded on an evicted pod: the plugin and
// profile that evicted it, the plugin's reason and what the preEvictionFilter plugins add (extra, the
// scheduler simulation's prediction), cut to an Event's 1 kB.
func EventMessage(plugin, profile, reason, extra string) string {
	return modeEventMessage("Evicted", plugin, profile, reason, extra)
}

// The modes of an eviction's Event note, as the console shows them ("" is an eviction).
const (
	ModeSoftEvicted  = "soft-evicted"
	ModeInBackground = "in background"
)

// modeWords are the note's first words for each mode.
var modeWords = map[string]string{"Evicted": "", "Soft-evicted": ModeSoftEvicted, "Evicted in background": ModeInBackground}

// SoftEvictedEventMessage is the note of a SoftEvicted Event (EventMessage's form).
func SoftEvictedEventMessage(plugin, profile, reason, extra string) string {
	return modeEventMessage("Soft-evicted", plugin, profile, reason, extra)
}

// InBackgroundEventMessage is the note of an EvictionInBackground Event (EventMessage's form).
func InBackgroundEventMessage(plugin, profile, reason string) string {
	return modeEventMessage("Evicted in background", plugin, profile, reason, "")
}

func modeEventMessage(words, plugin, profile, reason, extra string) string {
	msg := fmt.Sprintf("%s by the Accord descheduler, plugin %s (profile %s): %s", words, plugin, profile, reason)
	if extra != "" {
		msg += "; " + extra
	}
	if len(msg) > maxEventNote {
		msg = msg[:maxEventNote-3] + "..."
	}
	return msg
}

// EvictionNote is a Descheduled Event's note read back (ParseEventMessage).
type EvictionNote struct {
	// Mode is "" for an eviction, ModeSoftEvicted or ModeInBackground.
	Mode    string
	Plugin  string
	Profile string
	// Reason is the plugin's reason followed by what the preEvictionFilter plugins added, as written.
	Reason string
}

var eventMessageRE = regexp.MustCompile(`^(Evicted|Soft-evicted|Evicted in background) by the Accord descheduler, plugin (\S+) \(profile (.*?)\): (?s)(.*)$`)

// ParseEventMessage reads a note written by EventMessage, SoftEvictedEventMessage or
// InBackgroundEventMessage; ok is false for any other text.
func ParseEventMessage(msg string) (EvictionNote, bool) {
	m := eventMessageRE.FindStringSubmatch(msg)
	if m == nil {
		return EvictionNote{}, false
	}
	return EvictionNote{Mode: modeWords[m[1]], Plugin: m[2], Profile: m[3], Reason: m[4]}, true
}

// HeldEventMessage is the note of an EvictionHeld Event: a pod the plugin nominated and held by its
// workload budget or the profile's closed eviction window; held is what held it, why the error.
func HeldEventMessage(plugin, profile, held, why string) string {
	msg := fmt.Sprintf("Eviction held by the Accord descheduler, plugin %s (profile %s), %s: %s", plugin, profile, held, why)
	if len(msg) > maxEventNote {
		msg = msg[:maxEventNote-3] + "..."
	}
	return msg
}

// HeldNote is an EvictionHeld Event's note read back (ParseHeldMessage).
type HeldNote struct {
	Plugin, Profile string
	// Held is HeldWorkloadBudget or HeldWindow.
	Held   string
	Reason string
}

var heldMessageRE = regexp.MustCompile(`^Eviction held by the Accord descheduler, plugin (\S*) \(profile (.*?)\), (workload budget|eviction window): (?s)(.*)$`)

// ParseHeldMessage reads a note written by HeldEventMessage; ok is false for any other text.
func ParseHeldMessage(msg string) (HeldNote, bool) {
	m := heldMessageRE.FindStringSubmatch(msg)
	if m == nil {
		return HeldNote{}, false
	}
	return HeldNote{Plugin: m[1], Profile: m[2], Held: m[3], Reason: m[4]}, true
}
