package render_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/accord-sched/accord/manifests/render"
)

// TestChartReservationFirst: descheduler.reservationFirst makes ReservationFirst the evict plugin
// with schedulerNames the scheduler's (renamed) profile, and, with eventDriven, runs the
// PodMigration controller; both configurations load as the binaries load them.
func TestChartReservationFirst(t *testing.T) {
	r := release
	r.Values = map[string]any{
		"scheduler":   map[string]any{"schedulerName": "accord-renamed"},
		"descheduler": map[string]any{"reservationFirst": true},
	}
	objs, err := render.Chart(chartDir, r)
	if err != nil {
		t.Fatal(err)
	}
	pol := loadBoth(t, objs, "accord-scheduler-config", "accord-descheduler-policy")
	for _, want := range []string{"- name: ReservationFirst\n", "schedulerNames: [accord-renamed]",
		"enabled: [NodeCRDResourceFit, PodMigration]", "enabled: [ReservationFirst]"} {
		if !strings.Contains(pol, want) {
			t.Errorf("policy lacks %q:\n%s", want, pol)
		}
	}
	dep := render.Find(objs, "Deployment", "accord-descheduler")
	args := dep.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["args"].([]any)
	if !slices.Contains(args, any("--event-driven")) {
		t.Errorf("descheduler args %v lack --event-driven", args)
	}
}
