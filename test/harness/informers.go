package harness

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// CreateNamespace creates a namespace with a unique name for one test and deletes it when the test
// ends, so tests can run repeatedly (-count=2) against one control plane.
func (e *Env) CreateNamespace(t testing.TB, prefix string) string {
	t.Helper()
	ns, err := e.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	t.Cleanup(func() {
		_ = e.Client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}
