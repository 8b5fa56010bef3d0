package reliability

import (
	"context"
	"sync"
	"testing"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

// A periodic cycle's plugin and an event-triggered controller (two profiles here, sharing the
// descheduler's limiter as every evictor of one descheduler does) nominate the same pod at the same
// moment, several times over, and again later from their stale caches: the apiserver accepts exactly
// one eviction, and exactly one is counted.
func TestEvictionRaceOnOnePod(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, "race", "n1")
	proxy := newFaultProxy(t)
	profiles := []string{"cycle", "events"}
	d := buildDescheduler(t, c.writePolicy(evictionPolicy(profiles...)), proxy.config())
	pod := c.create(c.newPod("contested", c.node("n1"), nil))[0]
	const racers = 8
	start := make(chan struct{})
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := range racers {
		ev := d.Profiles()[i%len(profiles)].Evictor()
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = ev.Evict(ctx, pod.DeepCopy(), framework.EvictOptions{PluginName: "Reliability", Reason: "race"})
		}()
	}
	close(start)
	wg.Wait()
	// Later nominations from caches that have not seen the eviction yet.
	for _, p := range d.Profiles() {
		errs = append(errs, p.Evictor().Evict(ctx, pod.DeepCopy(), framework.EvictOptions{PluginName: "Reliability", Reason: "late"}))
	}
	won, goneN := 0, 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case framework.IsPodGone(err):
			goneN++
		default:
			t.Errorf("eviction %d: %v, want success or ErrPodGone", i, err)
		}
	}
	accepted := proxy.accepted(c.ns + "/" + pod.Name)
	counted := successes(d, "Reliability", pod, profiles...)
	if won != 1 || accepted != 1 || counted != 1 {
		t.Errorf("evictions: %d returned success, %d accepted by the apiserver, %v counted; want 1, 1, 1 (answers %v)", won, accepted, counted, proxy.answers())
	}
	if g, err := gone(ctx, pod); err != nil || !g {
		t.Errorf("pod not evicted (gone=%v, err %v)", g, err)
	}
	figure(t, "eviction_race_accepted", "%d of %d nominations of one pod (%d concurrent from 2 profiles, %d late; %d ErrPodGone)", accepted, len(errs), racers, len(profiles), goneN)
}
