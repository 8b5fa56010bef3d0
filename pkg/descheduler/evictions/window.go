package evictions

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
	// Time zones without the host's zoneinfo (distroless images).
	_ "time/tzdata"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/apis/descheduler"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
)

// window is one parsed EvictionWindow.
type window struct {
	days       [7]bool // by time.Weekday
	start, end time.Duration
	loc        *time.Location
}

var weekdays = map[string]time.Weekday{"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday}

func parseTimeOfDay(s string) (time.Duration, error) {
	for _, layout := range []string{"15:04:05", "15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute + time.Duration(t.Second())*time.Second, nil
		}
	}
	return 0, fmt.Errorf("want HH:MM or HH:MM:SS")
}

// ParseWindows parses a profile's evictionWindows; errors name the fields under path.
func ParseWindows(path *field.Path, ws []descheduler.EvictionWindow) (*Windows, field.ErrorList) {
	if len(ws) == 0 {
		return nil, nil
	}
	var errs field.ErrorList
	out := &Windows{}
	for i, w := range ws {
		p := path.Index(i)
		var pw window
		if len(w.Days) == 0 {
			pw.days = [7]bool{true, true, true, true, true, true, true}
		}
		for j, d := range w.Days {
			from, to, isRange := strings.Cut(strings.ToLower(strings.TrimSpace(d)), "-")
			a, okA := weekdays[from]
			b, okB := weekdays[to]
			if !isRange {
				b, okB = a, okA
			}
			if !okA || !okB {
				errs = append(errs, field.Invalid(p.Child("days").Index(j), d, "want Mon, Tue, Wed, Thu, Fri, Sat, Sun or a range such as Mon-Fri"))
				continue
			}
			for k := a; ; k = (k + 1) % 7 {
				pw.days[k] = true
				if k == b {
					break
				}
			}
		}
		var err error
		if pw.start, err = parseTimeOfDay(w.Start); err != nil {
			errs = append(errs, field.Invalid(p.Child("start"), w.Start, err.Error()))
		}
		if pw.end, err = parseTimeOfDay(w.End); err != nil {
			errs = append(errs, field.Invalid(p.Child("end"), w.End, err.Error()))
		}
		if err == nil && pw.start == pw.end {
			errs = append(errs, field.Invalid(p.Child("end"), w.End, "must differ from start"))
		}
		if pw.loc, err = time.LoadLocation(w.TimeZone); err != nil {
			errs = append(errs, field.Invalid(p.Child("timeZone"), w.TimeZone, "unknown time zone: "+err.Error()))
		}
		out.ws = append(out.ws, pw)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// wallClock is the instant the clocks of loc show the time of day tod on the date y-m-d (d may
// overflow the month; time.Date normalizes it). It is computed as a wall-clock time, not as midnight
// plus a duration, so an edge stays at its time on the days the clocks change; a time the clocks skip
// (02:30 on a spring-forward day in Europe/Berlin) is time.Date's answer, an instant the skipped
// hour's length later (03:30), and a time they show twice is the one time.Date picks (the second
// occurrence, with the offset after the change, in Go 1.26).
func wallClock(y int, m time.Month, d int, tod time.Duration, loc *time.Location) time.Time {
	s := int(tod / time.Second)
	return time.Date(y, m, d, s/3600, s/60%60, s%60, 0, loc)
}

// weekday is the day of the week of the date y-m-d (noon: a time every date has).
func weekday(y int, m time.Month, d int, loc *time.Location) time.Weekday {
	return time.Date(y, m, d, 12, 0, 0, 0, loc).Weekday()
}

// openAt reports whether w is open at now, and if so when it closes.
func (w window) openAt(now time.Time) (bool, time.Time) {
	t := now.In(w.loc)
	y, m, d := t.Date()
	// The window opened today or yesterday (one that ends after midnight).
	for back := 0; back <= 1; back++ {
		day := d - back
		if !w.days[weekday(y, m, day, w.loc)] {
			continue
		}
		open := wallClock(y, m, day, w.start, w.loc)
		endDay := day
		if w.end <= w.start {
			endDay++
		}
		end := wallClock(y, m, endDay, w.end, w.loc)
		if !t.Before(open) && t.Before(end) {
			return true, end
		}
	}
	return false, time.Time{}
}

// nextOpen is when w next opens after now.
func (w window) nextOpen(now time.Time) time.Time {
	t := now.In(w.loc)
	y, m, d := t.Date()
	for k := 0; k <= 7; k++ {
		if open := wallClock(y, m, d+k, w.start, w.loc); w.days[weekday(y, m, d+k, w.loc)] && open.After(t) {
			return open
		}
	}
	return time.Time{}
}

// Windows are a profile's eviction windows: the profile evicts only while one is open. Observe
// logs and sets the accord_descheduler_eviction_window_open metric at each edge it sees.
type Windows struct {
	ws []window

	mu sync.Mutex
	// seen is the last state observed: 0 unknown, 1 open, 2 closed.
	seen int
	// onOpen are called when Observe sees the windows open (OnOpen), by registration number.
	onOpen map[int]func()
	nextID int
}

// OnOpen calls fn each time Observe sees the windows open (a change from closed or unknown; the
// edge timer of WatchEdges observes each edge on time), until remove is called. fn is called
// without any lock held.
func (w *Windows) OnOpen(fn func()) (remove func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.onOpen == nil {
		w.onOpen = map[int]func(){}
	}
	id := w.nextID
	w.nextID++
	w.onOpen[id] = fn
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.onOpen, id)
	}
}

// Open reports whether a window is open at now; when none is, next is when the first opens.
func (w *Windows) Open(now time.Time) (open bool, next time.Time) {
	for _, x := range w.ws {
		if ok, _ := x.openAt(now); ok {
			return true, time.Time{}
		}
		if n := x.nextOpen(now); !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
	}
	return false, next
}

// Observe returns Open(now), and at a change of state logs it and sets the profile's gauge.
func (w *Windows) Observe(now time.Time, profile string, m *metrics.Metrics) (open bool, next time.Time) {
	open, next = w.Open(now)
	state := 2
	if open {
		state = 1
	}
	w.mu.Lock()
	changed := w.seen != state
	w.seen = state
	var notify []func()
	if changed && open {
		for _, fn := range w.onOpen {
			notify = append(notify, fn)
		}
	}
	w.mu.Unlock()
	defer func() {
		for _, fn := range notify {
			fn()
		}
	}()
	if changed {
		if m != nil {
			v := 0.0
			if open {
				v = 1
			}
			m.WindowOpen.WithLabelValues(profile).Set(v)
		}
		if open {
			klog.InfoS("Eviction window open: the profile evicts", "profile", profile, "at", now.Format(time.RFC3339))
		} else {
			klog.InfoS("Eviction window closed: the profile evicts nothing until it opens", "profile", profile, "at", now.Format(time.RFC3339), "nextOpen", next.Format(time.RFC3339))
		}
	}
	return open, next
}

// NextEdge is the first time after now at which one of the windows opens or closes (zero when
// none ever does).
func (w *Windows) NextEdge(now time.Time) time.Time {
	var next time.Time
	for _, x := range w.ws {
		edge := x.nextOpen(now)
		if ok, end := x.openAt(now); ok {
			edge = end
		}
		if !edge.IsZero() && (next.IsZero() || edge.Before(next)) {
			next = edge
		}
	}
	return next
}

// WatchEdges observes the windows at start and at each edge until ctx is done, so the window edge's
// log line and the eviction_window_open gauge come on time, whether or not anything is evicted then.
// now is the clock (time.Now when nil).
func (w *Windows) WatchEdges(ctx context.Context, profile string, m *metrics.Metrics, now func() time.Time) {
	if now == nil {
		now = time.Now
	}
	for {
		t := now()
		w.Observe(t, profile, m)
		edge := w.NextEdge(t)
		if edge.IsZero() {
			return
		}
		// A little past the edge, so the observation falls on its far side.
		timer := time.NewTimer(edge.Sub(t) + 10*time.Millisecond)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
	}
}
