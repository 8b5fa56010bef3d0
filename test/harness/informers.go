package harness

import (
	"reflect"
	"testing"
)

// InformerFactory is what client-go's and Accord's generated shared informer factories have in common.
type InformerFactory interface {
	Start(stopCh <-chan struct{})
	WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool
	Shutdown()
}

// StartInformers starts the factory's informers, waits for their caches, and stops them when the
// test ends.
func StartInformers(t testing.TB, f InformerFactory) {
	t.Helper()
	stop := make(chan struct{})
	f.Start(stop)
	t.Cleanup(func() {
		close(stop)
		f.Shutdown()
	})
	for typ, ok := range f.WaitForCacheSync(stop) {
		if !ok {
			t.Fatalf("informer cache for %v did not sync", typ)
		}
	}
}
