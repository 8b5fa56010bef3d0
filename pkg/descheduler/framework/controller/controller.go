// Package controller helps write event-triggered descheduling plugins (framework.Controller): a
// client-go rate-limited workqueue fed by informer event handlers and drained by workers that call
// the plugin's reconcile function.
package controller

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/internal/workqueueutil"
)

// ReconcileFunc handles one key; an error puts the key back with a rate-limited delay.
type ReconcileFunc func(ctx context.Context, key string) error

// Queue is a named, rate-limited workqueue of object keys (namespace/name).
type Queue struct {
	name      string
	queue     workqueue.TypedRateLimitingInterface[string]
	reconcile ReconcileFunc

	mu sync.Mutex
	// retrying are the keys whose last reconcile failed: they wait for their back-off.
	retrying map[string]bool
}

// NewQueue returns a queue whose items are retried with client-go's default controller rate
// limiter (per-item exponential back-off from 5ms, and an overall token bucket).
func NewQueue(name string, reconcile ReconcileFunc) *Queue {
	return &Queue{
		name: name,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name}),
		reconcile: reconcile,
		retrying:  map[string]bool{},
	}
}

// RetryNow queues at once every key waiting for its back-off after a failed reconcile, with its
// back-off reset: what held them (a closed eviction window) has changed.
func (q *Queue) RetryNow() {
	q.mu.Lock()
	keys := make([]string, 0, len(q.retrying))
	for k := range q.retrying {
		keys = append(keys, k)
	}
	q.mu.Unlock()
	for _, k := range keys {
		q.queue.Forget(k)
		q.queue.Add(k)
	}
}

// RetryWhenWindowsOpen makes each opening of an eviction window of ev's profile (when ev is a
// framework.WindowWatcher) retry the keys waiting for their back-off at once (RetryNow): a key held
// by a closed window would otherwise wait up to the back-off's cap (1000 s) after the window opened.
// Call remove when the queue stops.
func (q *Queue) RetryWhenWindowsOpen(ev framework.Evictor) (remove func()) {
	w, ok := ev.(framework.WindowWatcher)
	if !ok {
		return func() {}
	}
	return w.OnWindowOpen(func() {
		q.mu.Lock()
		n := len(q.retrying)
		q.mu.Unlock()
		if n > 0 {
			klog.InfoS("Eviction window open; retrying the held keys now", "queue", q.name, "keys", n)
		}
		q.RetryNow()
	})
}

// ShutDown stops the queue without Run (a test that calls the reconcile function itself); Run shuts
// it down when its ctx ends.
func (q *Queue) ShutDown() { q.queue.ShutDown() }

// Add queues a key.
func (q *Queue) Add(key string) { q.queue.Add(key) }

// AddAfter queues a key after a delay.
func (q *Queue) AddAfter(key string, d time.Duration) { q.queue.AddAfter(key, d) }

// Len returns the number of queued keys.
func (q *Queue) Len() int { return q.queue.Len() }

// EventHandler returns an informer event handler that queues the key of every added or updated
// object that passes filter (all when filter is nil).
func (q *Queue) EventHandler(filter func(obj any) bool) cache.ResourceEventHandler {
	add := func(obj any) {
		if filter != nil && !filter(obj) {
			return
		}
		key, err := cache.MetaNamespaceKeyFunc(obj)
		if err != nil {
			klog.ErrorS(err, "Cannot key object", "queue", q.name)
			return
		}
		q.queue.Add(key)
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, obj any) { add(obj) }}
}

// Run drains the queue with workers goroutines until ctx ends, then shuts the queue down and waits
// for the workers.
func (q *Queue) Run(ctx context.Context, workers int) {
	if workers < 1 {
		workers = 1
	}
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "queue", q.name)
	ctx = klog.NewContext(ctx, logger)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for q.processNext(ctx) {
			}
		}()
	}
	<-ctx.Done()
	q.queue.ShutDown()
	wg.Wait()
}

func (q *Queue) processNext(ctx context.Context) bool {
	return workqueueutil.ProcessNext(ctx, q.queue, func(ctx context.Context, key string) (time.Duration, error) {
		err := q.reconcile(ctx, key)
		if err == nil {
			q.mu.Lock()
			delete(q.retrying, key)
			q.mu.Unlock()
		}
		return 0, err
	}, func(key string, err error) {
		q.mu.Lock()
		q.retrying[key] = true
		q.mu.Unlock()
		klog.FromContext(ctx).V(2).Info("Retrying", "key", key, "err", err, "requeues", q.queue.NumRequeues(key))
	})
}
