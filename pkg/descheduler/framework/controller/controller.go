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

	"github.com/accord-sched/accord/pkg/internal/workqueueutil"
)

// ReconcileFunc handles one key; an error puts the key back with a rate-limited delay.
type ReconcileFunc func(ctx context.Context, key string) error

// Queue is a named, rate-limited workqueue of object keys (namespace/name).
type Queue struct {
	name      string
	queue     workqueue.TypedRateLimitingInterface[string]
	reconcile ReconcileFunc
}

// NewQueue returns a queue whose items are retried with client-go's default controller rate
// limiter (per-item exponential back-off from 5ms, and an overall token bucket).
func NewQueue(name string, reconcile ReconcileFunc) *Queue {
	return &Queue{
		name: name,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name}),
		reconcile: reconcile,
	}
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
		return 0, q.reconcile(ctx, key)
	}, func(key string, err error) {
		klog.FromContext(ctx).V(2).Info("Retrying", "key", key, "err", err, "requeues", q.queue.NumRequeues(key))
	})
}
