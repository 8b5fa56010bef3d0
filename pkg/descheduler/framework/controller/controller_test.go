package controller

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestQueueRetriesAndFilters(t *testing.T) {
	var mu sync.Mutex
	attempts := map[string]int{}
	done := make(chan string, 10)
	q := NewQueue("test", func(_ context.Context, key string) error {
		mu.Lock()
		defer mu.Unlock()
		attempts[key]++
		if key == "ns/flaky" && attempts[key] < 3 {
			return errors.New("not yet")
		}
		done <- key
		return nil
	})
	h := q.EventHandler(func(obj any) bool { return obj.(*corev1.Pod).Labels["watch"] == "yes" })
	h.OnAdd(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ignored"}}, false)
	h.OnAdd(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "flaky", Labels: map[string]string{"watch": "yes"}}}, false)
	h.OnUpdate(nil, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ok", Labels: map[string]string{"watch": "yes"}}})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { q.Run(ctx, 2); close(stopped) }()
	got := map[string]bool{}
	for len(got) < 2 {
		select {
		case k := <-done:
			got[k] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("reconciled only %v", got)
		}
	}
	cancel()
	<-stopped
	mu.Lock()
	defer mu.Unlock()
	if attempts["ns/flaky"] != 3 || attempts["ns/ok"] != 1 || attempts["ns/ignored"] != 0 {
		t.Errorf("attempts = %v", attempts)
	}
}
