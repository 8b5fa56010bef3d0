package policy_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/accord-sched/accord/pkg/descheduler/policy"
)

// TestPodMigrationNeedsReservationFirst: the PodMigration controller moves pods through its
// profile's evict plugin, reservation-first: with another evict plugin the policy is refused naming
// PodMigration's field.
func TestPodMigrationNeedsReservationFirst(t *testing.T) {
	reg, args := registries(t)
	path := filepath.Join(t.TempDir(), "policy.yaml")
	doc := `apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: migrate
  plugins:
    deschedule:
      enabled: [PodMigration]
`
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := policy.Load(path, reg, args)
	if want := `profiles[0].plugins.deschedule.enabled[0]: Invalid value: "PodMigration"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want %q", err, want)
	}
	if err := os.WriteFile(path, []byte(doc+"    evict:\n      enabled: [ReservationFirst]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := policy.Load(path, reg, args); err != nil {
		t.Fatalf("PodMigration with ReservationFirst: %v", err)
	}
}
