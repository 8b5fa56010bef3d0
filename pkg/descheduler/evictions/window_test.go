package evictions

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-base/metrics/testutil"

	"github.com/accord-sched/accord/apis/descheduler"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
)

func mustWindows(t *testing.T, ws ...descheduler.EvictionWindow) *Windows {
	t.Helper()
	w, errs := ParseWindows(field.NewPath("evictionWindows"), ws)
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	return w
}

// TestWindowsWeekdaysBerlin: weekdays 01:00-05:00 Europe/Berlin, on a fake clock.
func TestWindowsWeekdaysBerlin(t *testing.T) {
	w := mustWindows(t, descheduler.EvictionWindow{Days: []string{"Mon-Fri"}, Start: "01:00", End: "05:00", TimeZone: "Europe/Berlin"})
	berlin, _ := time.LoadLocation("Europe/Berlin")
	at := func(s string) time.Time {
		tt, err := time.ParseInLocation("2006-01-02 15:04", s, berlin)
		if err != nil {
			t.Fatal(err)
		}
		return tt
	}
	for _, tc := range []struct {
		now  string
		open bool
		next string
	}{
		{"2026-11-26 00:59", false, "2026-11-26 01:00"}, // Thursday
		{"2026-11-26 01:00", true, ""},
		{"2026-11-26 04:59", true, ""},
		{"2026-11-26 05:00", false, "2026-11-27 01:00"},
		{"2026-11-27 06:00", false, "2026-11-30 01:00"}, // Friday after the window: next Monday
		{"2026-11-28 02:00", false, "2026-11-30 01:00"}, // Saturday
	} {
		open, next := w.Open(at(tc.now).UTC())
		if open != tc.open || (!tc.open && !next.Equal(at(tc.next))) {
			t.Errorf("%s Berlin: open %v next %v, want open %v next %s", tc.now, open, next.In(berlin), tc.open, tc.next)
		}
	}
}

func TestWindowsOvernightAndErrors(t *testing.T) {
	w := mustWindows(t, descheduler.EvictionWindow{Days: []string{"Sat"}, Start: "22:00", End: "02:00:30"})
	sat := time.Date(2026, 11, 28, 23, 0, 0, 0, time.UTC)
	if open, _ := w.Open(sat); !open {
		t.Error("Saturday 23:00 UTC: closed, want open")
	}
	if open, _ := w.Open(sat.Add(3*time.Hour + 29*time.Second)); !open {
		t.Error("Sunday 02:00:29: closed, but the window opened on Saturday runs until 02:00:30")
	}
	if open, _ := w.Open(sat.Add(3*time.Hour + 30*time.Second)); open {
		t.Error("Sunday 02:00:30: open, want closed (the end is exclusive)")
	}
	_, errs := ParseWindows(field.NewPath("profiles").Index(0).Child("evictionWindows"), []descheduler.EvictionWindow{
		{Days: []string{"Mon-Fry"}, Start: "25:00", End: "1:00pm", TimeZone: "Mars/Olympus"},
	})
	got := errs.ToAggregate().Error()
	for _, want := range []string{"profiles[0].evictionWindows[0].days[0]", "evictionWindows[0].start", "evictionWindows[0].end", "evictionWindows[0].timeZone"} {
		if !strings.Contains(got, want) {
			t.Errorf("errors %q do not name %s", got, want)
		}
	}
}

// TestEvictorOutsideWindow: outside the window nothing is evicted (held, counted, logged at the
// edge); a dry run says it would evict and when; once the clock reaches the window, it evicts.
func TestEvictorOutsideWindow(t *testing.T) {
	now := time.Date(2026, 11, 26, 0, 59, 0, 0, time.UTC)
	counter := &countingEvict{}
	e := &ProfileEvictor{
		Profile: "night", EvictPlugin: counter, Limiter: NewLimiter(Limits{}), Metrics: metrics.New(),
		Windows: mustWindows(t, descheduler.EvictionWindow{Start: "01:00", End: "05:00"}),
		Now:     func() time.Time { return now },
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u"}, Spec: corev1.PodSpec{NodeName: "n1"}}
	err := e.Evict(context.Background(), pod, framework.EvictOptions{PluginName: "Pl"})
	var we *framework.WindowClosedError
	if !errors.As(err, &we) || !we.NextOpen.Equal(now.Add(time.Minute)) || errors.Is(err, framework.ErrDryRun) {
		t.Fatalf("outside the window: %v, want a WindowClosedError naming 01:00", err)
	}
	if err := e.CheckLimits(pod); !framework.IsWindowClosed(err) {
		t.Errorf("CheckLimits outside the window: %v", err)
	}
	if v, _ := testutil.GetGaugeMetricValue(e.Metrics.WindowOpen.WithLabelValues("night")); v != 0 {
		t.Errorf("window gauge %v while closed", v)
	}
	if counter.calls.Load() != 0 {
		t.Errorf("%d evictions outside the window", counter.calls.Load())
	}
	if v, _ := testutil.GetCounterMetricValue(e.Metrics.EvictionsHeld.WithLabelValues(metrics.HeldWindowClosed, "night")); v != 2 {
		t.Errorf("held counter %v, want 2", v)
	}
	e.DryRun = true
	err = e.Evict(context.Background(), pod, framework.EvictOptions{PluginName: "Pl"})
	if !framework.IsWindowClosed(err) || !errors.Is(err, framework.ErrDryRun) || !strings.Contains(err.Error(), "2026-11-26T01:00:00Z") {
		t.Errorf("dry run outside the window: %v, want it to say it would evict at 01:00", err)
	}
	e.DryRun = false
	now = now.Add(time.Minute)
	if err := e.Evict(context.Background(), pod, framework.EvictOptions{PluginName: "Pl"}); err != nil || counter.calls.Load() != 1 {
		t.Fatalf("in the window: %v (%d evicted)", err, counter.calls.Load())
	}
	if v, _ := testutil.GetGaugeMetricValue(e.Metrics.WindowOpen.WithLabelValues("night")); v != 1 {
		t.Errorf("window gauge %v while open", v)
	}
}

// TestWindowsEdges: NextEdge is the next opening or closing; WatchEdges observes each edge on
// time (on a clock that stands 50 ms before a window closes, then just after), so the gauge falls
// to 0 without any eviction being decided.
func TestWindowsEdges(t *testing.T) {
	w := mustWindows(t, descheduler.EvictionWindow{Days: []string{"Mon-Fri"}, Start: "01:00", End: "05:00", TimeZone: "UTC"})
	at := func(s string) time.Time {
		tt, err := time.Parse("2006-01-02 15:04:05.000", s)
		if err != nil {
			t.Fatal(err)
		}
		return tt
	}
	for now, want := range map[string]string{
		"2026-11-26 00:30:00.000": "2026-11-26 01:00:00.000",
		"2026-11-26 02:00:00.000": "2026-11-26 05:00:00.000",
		"2026-11-27 05:00:00.000": "2026-11-30 01:00:00.000",
	} {
		if got := w.NextEdge(at(now)); !got.Equal(at(want)) {
			t.Errorf("NextEdge(%s) = %s, want %s", now, got, want)
		}
	}
	m := metrics.New()
	clock := []time.Time{at("2026-11-26 04:59:59.950"), at("2026-11-26 05:00:00.010")}
	calls := make(chan struct{}, 4)
	now := func() time.Time {
		calls <- struct{}{}
		if len(clock) > 1 {
			c := clock[0]
			clock = clock[1:]
			return c
		}
		return clock[0]
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.WatchEdges(ctx, "night", m, now); close(done) }()
	<-calls
	<-calls // the second observation, after the 60 ms timer
	cancel()
	<-done
	if v, err := testutil.GetGaugeMetricValue(m.WindowOpen.WithLabelValues("night")); err != nil || v != 0 {
		t.Errorf("eviction_window_open after the close = %v (%v), want 0", v, err)
	}
}

// TestWindowsAcrossDST: a window's edges are wall-clock times of its zone, on the days the clocks
// change too (both 2026 transitions in Europe/Berlin and America/New_York, and Australia/Lord_Howe's
// 30-minute ones). The expected instants are written with their offsets, not computed.
func TestWindowsAcrossDST(t *testing.T) {
	for _, tc := range []struct {
		zone, start, end string
		open, close      string // RFC 3339 with the zone's offset at that instant
	}{
		// Spring forward at 02:00 CET: the window is 3 hours long.
		{"Europe/Berlin", "01:00", "05:00", "2026-03-29T01:00:00+01:00", "2026-03-29T05:00:00+02:00"},
		{"Europe/Berlin", "03:00", "06:00", "2026-03-29T03:00:00+02:00", "2026-03-29T06:00:00+02:00"},
		// Fall back at 03:00 CEST: the window is 5 hours long.
		{"Europe/Berlin", "01:00", "05:00", "2026-10-25T01:00:00+02:00", "2026-10-25T05:00:00+01:00"},
		{"Europe/Berlin", "04:00", "07:00", "2026-10-25T04:00:00+01:00", "2026-10-25T07:00:00+01:00"},
		// A start the clocks skip opens when they reach it; one they show twice, at the second
		// (time.Date's choice).
		{"Europe/Berlin", "02:30", "04:00", "2026-03-29T03:30:00+02:00", "2026-03-29T04:00:00+02:00"},
		{"Europe/Berlin", "02:30", "04:00", "2026-10-25T02:30:00+01:00", "2026-10-25T04:00:00+01:00"},
		// Overnight, across the change.
		{"Europe/Berlin", "22:00", "06:00", "2026-03-28T22:00:00+01:00", "2026-03-29T06:00:00+02:00"},
		{"America/New_York", "01:00", "05:00", "2026-03-08T01:00:00-05:00", "2026-03-08T05:00:00-04:00"},
		{"America/New_York", "01:00", "05:00", "2026-11-01T01:00:00-04:00", "2026-11-01T05:00:00-05:00"},
		// Lord Howe Island moves its clocks by 30 minutes.
		{"Australia/Lord_Howe", "01:00", "05:00", "2026-10-04T01:00:00+10:30", "2026-10-04T05:00:00+11:00"},
		{"Australia/Lord_Howe", "01:00", "05:00", "2026-04-05T01:00:00+11:00", "2026-04-05T05:00:00+10:30"},
		{"Australia/Lord_Howe", "03:00", "04:00", "2026-10-04T03:00:00+11:00", "2026-10-04T04:00:00+11:00"},
	} {
		name := tc.zone + " " + tc.open[:10] + " " + tc.start + "-" + tc.end
		w := mustWindows(t, descheduler.EvictionWindow{Start: tc.start, End: tc.end, TimeZone: tc.zone})
		open, err := time.Parse(time.RFC3339, tc.open)
		if err != nil {
			t.Fatal(err)
		}
		closeAt, err := time.Parse(time.RFC3339, tc.close)
		if err != nil {
			t.Fatal(err)
		}
		loc, _ := time.LoadLocation(tc.zone)
		if o, next := w.Open(open.Add(-time.Second)); o || !next.Equal(open) {
			t.Errorf("%s: a second before %s: open %v, next %s; want closed, opening at %s", name, tc.open, o, next.In(loc).Format(time.RFC3339), tc.open)
		}
		if o, _ := w.Open(open); !o {
			t.Errorf("%s: closed at %s, want open", name, tc.open)
		}
		if edge := w.NextEdge(open); !edge.Equal(closeAt) {
			t.Errorf("%s: next edge after opening %s, want it to close at %s", name, edge.In(loc).Format(time.RFC3339), tc.close)
		}
		if o, _ := w.Open(closeAt.Add(-time.Second)); !o {
			t.Errorf("%s: closed a second before %s, want open", name, tc.close)
		}
		if o, _ := w.Open(closeAt); o {
			t.Errorf("%s: open at %s, want closed", name, tc.close)
		}
	}
}
