package evictions

import (
	"strings"
	"testing"
)

func TestEventMessageRoundTrip(t *testing.T) {
	for _, tc := range []struct{ plugin, profile, reason, extra, wantReason string }{
		{"NodeCRDResourceFit", "accord", "node node-5 no longer enables example.com/memory", "", "node node-5 no longer enables example.com/memory"},
		{"LowNodeLoad", "p (x)", "hot", "scheduler simulation (profile accord-scheduler): replacement predicted on node-2 with score 55 (current node node-5 does not fit)",
			"hot; scheduler simulation (profile accord-scheduler): replacement predicted on node-2 with score 55 (current node node-5 does not fit)"},
	} {
		msg := EventMessage(tc.plugin, tc.profile, tc.reason, tc.extra)
		got, ok := ParseEventMessage(msg)
		if !ok {
			t.Fatalf("ParseEventMessage(%q) did not recognise the note", msg)
		}
		if got.Plugin != tc.plugin || got.Reason != tc.wantReason {
			t.Errorf("ParseEventMessage(%q) = %+v, want plugin %q reason %q", msg, got, tc.plugin, tc.wantReason)
		}
	}
}

func TestEventMessageIsCutToOneKilobyte(t *testing.T) {
	msg := EventMessage("P", "p", strings.Repeat("r", 2000), "")
	if len(msg) != maxEventNote || !strings.HasSuffix(msg, "...") {
		t.Errorf("note of %d bytes ending %q, want %d ending ...", len(msg), msg[len(msg)-5:], maxEventNote)
	}
	if n, ok := ParseEventMessage(msg); !ok || n.Plugin != "P" {
		t.Errorf("a cut note is still read: got %+v, %v", n, ok)
	}
}

func TestParseEventMessageRejectsOtherNotes(t *testing.T) {
	for _, msg := range []string{"", "Eviction by X failed (r): boom", "Evicted by someone else"} {
		if n, ok := ParseEventMessage(msg); ok {
			t.Errorf("ParseEventMessage(%q) = %+v, want not recognised", msg, n)
		}
	}
}
