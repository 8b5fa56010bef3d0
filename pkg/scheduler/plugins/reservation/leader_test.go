package reservation

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestWaitLeader: a Placer that does not lead places nothing until it does; without leader
// election it starts at once; a context that ends first stops the wait.
func TestWaitLeader(t *testing.T) {
	if !(&Placer{}).waitLeader(context.Background()) {
		t.Fatal("without leader election the placer must start at once")
	}
	calls := 0
	p := &Placer{isLeader: func(context.Context) (bool, error) {
		calls++
		switch calls {
		case 1:
			return false, errors.New("lease unreadable")
		case 2:
			return false, nil
		}
		return true, nil
	}}
	start := time.Now()
	if !p.waitLeader(context.Background()) || calls != 3 {
		t.Fatalf("waitLeader returned after %d checks, want 3", calls)
	}
	if d := time.Since(start); d < 2*LeaderPoll {
		t.Errorf("returned after %s, want two polls", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	never := &Placer{isLeader: func(context.Context) (bool, error) { return false, nil }}
	if never.waitLeader(ctx) {
		t.Fatal("a replica that never leads must not start placing")
	}
}
