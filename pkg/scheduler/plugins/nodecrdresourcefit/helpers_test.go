package nodecrdresourcefit

import (
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	"os"
	"testing"

	"k8s.io/client-go/tools/cache"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
)

// newIndexer returns an informer-style indexer holding crs (nil entries are skipped).
func newIndexer(t testing.TB, crs ...*schedv1alpha1.ClusterScopedResource) cache.Indexer {
	t.Helper()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, c := range crs {
		if c == nil {
			continue
		}
		if err := indexer.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	return indexer
}

func TestMain(m *testing.M) {
	// The framework records plugin metrics; they must be registered first, as in the scheduler.
	metrics.Register()
	os.Exit(m.Run())
}
