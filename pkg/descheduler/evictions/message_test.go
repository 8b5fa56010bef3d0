package evictions

import (
	"strings"
	"testing"
)

func TestEventMessageIsCutToOneKilobyte(t *testing.T) {
	msg := EventMessage("P", "p", strings.Repeat("r", 2000), "")
	if len(msg) != maxEventNote || !strings.HasSuffix(msg, "...") {
		t.Errorf("note of %d bytes ending %q, want %d ending ...", len(msg), msg[len(msg)-5:], maxEventNote)
	}
	if !strings.HasPrefix(msg, "Evicted by the Accord descheduler, plugin P (profile p): rrr") {
		t.Errorf("note %q...", msg[:80])
	}
}
