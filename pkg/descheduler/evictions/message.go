package evictions

import "fmt"

// maxEventNote is the longest note an Event accepts (1 kB).
const maxEventNote = 1024

// The notes of the evictor's Events are for people (kubectl describe); the decision they record is
// in the Event's decision.Annotation, which is what programs read (the console).

// EventMessage is the note of the Descheduled Event recorded on an evicted pod: the plugin and
// profile that evicted it, the plugin's reason and what the preEvictionFilter plugins add (extra, the
// scheduler simulation's prediction), cut to an Event's 1 kB.
func EventMessage(plugin, profile, reason, extra string) string {
	return modeEventMessage("Evicted", plugin, profile, reason, extra)
}

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

// HeldEventMessage is the note of an EvictionHeld Event: a pod the plugin nominated and held by its
// workload budget or the profile's closed eviction window; held is what held it, why the error.
func HeldEventMessage(plugin, profile, held, why string) string {
	msg := fmt.Sprintf("Eviction held by the Accord descheduler, plugin %s (profile %s), %s: %s", plugin, profile, held, why)
	if len(msg) > maxEventNote {
		msg = msg[:maxEventNote-3] + "..."
	}
	return msg
}
