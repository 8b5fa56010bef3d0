package pluginutil

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

// EvictOverlapped evicts pods (sorted with SortByPriorityLowToHigh) as a loop of framework.Evict over them
// does, but with up to inFlight evictions under way at once, so that a node's many violators do
// not wait for each other's apiserver round trips:
//
//   - each pod passes the cycle's limits (Evictor.CheckLimits, as in framework.Evict) and
//     PreEvictionFilter in turn, on this goroutine: decisions are made one at a time and in order
//     (SchedulerSimulation composes the moves it admits);
//   - an admitted pod's eviction runs on its own goroutine, at most inFlight at a time; the next
//     pod is decided once that eviction has taken its limits or been refused them
//     (EvictOptions.GatesPassed), so the limits go to the pods in this order and only the evict
//     plugin's work (the API call, a reservation-first plugin's wait) overlaps;
//   - a pod that does not compare equal (ComparePriorityLowToHigh) to the pods being evicted waits
//     until their evictions are done, so the limits go to the lowest priorities first, as in the
//     loop (pods that compare equal are in no defined order there either);
//   - once an eviction reports NodeFull or StopEvicting, no further pod is decided or evicted (the ones
//     already in flight finish: they are refused by the same limit). At most inFlight pods are
//     thus admitted by PreEvictionFilter and then not evicted, where the loop has at most one:
//     a pod is decided only while fewer than inFlight evictions are under way.
//
// It returns StopEvicting when the cycle's total limit, stale caches or ctx stopped it, NotEvicted
// when a pod was not evicted (a filter, a limit, a PodDisruptionBudget), Evicted otherwise. reason gives each
// pod's eviction reason. inFlight < 2 is the loop.
func EvictOverlapped(ctx context.Context, ev framework.Evictor, pods []*corev1.Pod, plugin string, reason func(*corev1.Pod) string, inFlight int) framework.EvictOutcome {
	inFlight = max(inFlight, 1)
	var (
		wg     sync.WaitGroup
		slots  = make(chan struct{}, inFlight)
		mu     sync.Mutex
		stop   bool // StopEvicting seen
		full   bool // NodeFull seen
		failed bool // a pod not evicted
	)
	halted := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return stop || full
	}
	record := func(out framework.EvictOutcome) {
		mu.Lock()
		defer mu.Unlock()
		switch out {
		case framework.StopEvicting:
			stop = true
		case framework.NodeFull:
			full = true
		case framework.NotEvicted, framework.NamespaceFull:
			failed = true
		}
	}
	var rank *corev1.Pod // a pod of the priority rank being evicted
	for _, pod := range pods {
		if ctx.Err() != nil {
			record(framework.StopEvicting)
			break
		}
		if rank != nil && ComparePriorityLowToHigh(rank, pod) != 0 {
			wg.Wait()
		}
		// The slot first: with inFlight 1 a pod is decided only once the previous eviction is
		// done, and no pod is decided after a limit was reached.
		slots <- struct{}{}
		if halted() {
			<-slots
			break
		}
		rank = pod
		// As in framework.Evict: a pod the limits stop already (counting the evictions in flight, which
		// hold their reservations) is not simulated.
		if err := ev.CheckLimits(pod); err != nil {
			<-slots
			record(framework.OutcomeOf(ctx, pod, plugin, err))
			continue
		}
		if !ev.PreEvictionFilter(pod) {
			<-slots
			record(framework.NotEvicted)
			continue
		}
		// The eviction's limits are taken before the next pod is decided (GatesPassed, or the
		// eviction's end with an Evictor that does not call it): only the API call and a
		// reservation-first plugin's wait overlap, and the caps go to the pods in this order.
		gated, done := make(chan struct{}), make(chan struct{})
		var once sync.Once
		opts := framework.EvictOptions{PluginName: plugin, Reason: reason(pod), GatesPassed: func() { once.Do(func() { close(gated) }) }}
		wg.Add(1)
		go func(pod *corev1.Pod) {
			defer wg.Done()
			defer close(done)
			defer func() { <-slots }()
			record(framework.EvictFilteredWith(ctx, ev, pod, opts))
		}(pod)
		select {
		case <-gated:
		case <-done:
		}
	}
	wg.Wait()
	switch {
	case stop:
		return framework.StopEvicting
	case full, failed:
		return framework.NotEvicted
	}
	return framework.Evicted
}
