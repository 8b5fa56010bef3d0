// Package workqueueutil holds the one worker step the project's rate-limited workqueues share: the
// descheduler's controller queues, accord-scheduler's reservation placer and the playground's node
// simulator.
package workqueueutil

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// ProcessNext takes one key from q and runs sync on it. On success the key is forgotten and, when
// sync returns a positive delay, queued again after it. On an error, unless ctx is done, retried is
// called (for the caller's log line) and the key is put back with q's rate limit. It returns false
// once q is shut down.
func ProcessNext[T comparable](ctx context.Context, q workqueue.TypedRateLimitingInterface[T], sync func(context.Context, T) (time.Duration, error), retried func(T, error)) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)
	after, err := sync(ctx, key)
	switch {
	case err == nil:
		q.Forget(key)
		if after > 0 {
			q.AddAfter(key, after)
		}
	case ctx.Err() != nil:
	default:
		retried(key, err)
		q.AddRateLimited(key)
	}
	return true
}
