package workqueueutil

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
)

func TestProcessNext(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, time.Millisecond))
	defer q.ShutDown()
	ctx := context.Background()
	var retried []string
	onRetry := func(key string, _ error) { retried = append(retried, key) }

	// An error: retried once and put back, rate limited.
	q.Add("a")
	if !ProcessNext(ctx, q, func(context.Context, string) (time.Duration, error) { return 0, errors.New("boom") }, onRetry) {
		t.Fatal("ProcessNext = false on a running queue")
	}
	if len(retried) != 1 || retried[0] != "a" || q.NumRequeues("a") != 1 {
		t.Fatalf("after an error: retried %v, requeues %d; want [a], 1", retried, q.NumRequeues("a"))
	}
	// Success with a delay: forgotten, and queued again after it.
	if !ProcessNext(ctx, q, func(context.Context, string) (time.Duration, error) { return 5 * time.Millisecond, nil }, onRetry) {
		t.Fatal("ProcessNext = false on a running queue")
	}
	if q.NumRequeues("a") != 0 || len(retried) != 1 {
		t.Fatalf("after success: requeues %d, retried %v; want 0, [a]", q.NumRequeues("a"), retried)
	}
	// Success without a delay: nothing queued.
	if !ProcessNext(ctx, q, func(context.Context, string) (time.Duration, error) { return 0, nil }, onRetry) {
		t.Fatal("ProcessNext = false on a running queue")
	}
	if q.Len() != 0 {
		t.Fatalf("queue length %d after a sync without delay, want 0", q.Len())
	}
	// An error once ctx is done: neither retried nor put back.
	done, cancel := context.WithCancel(ctx)
	cancel()
	q.Add("b")
	ProcessNext(done, q, func(context.Context, string) (time.Duration, error) { return 0, errors.New("late") }, onRetry)
	if len(retried) != 1 || q.NumRequeues("b") != 0 {
		t.Fatalf("after ctx done: retried %v, requeues of b %d; want no retry", retried, q.NumRequeues("b"))
	}
	q.ShutDown()
	if ProcessNext(ctx, q, func(context.Context, string) (time.Duration, error) { return 0, nil }, onRetry) {
		t.Fatal("ProcessNext = true on a shut down queue")
	}
}
