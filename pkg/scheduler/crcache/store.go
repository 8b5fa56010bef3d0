package crcache

import (
	"fmt"

	"k8s.io/client-go/tools/cache"
)

// Store reads cluster-scoped objects of one type from an informer's indexer by name. Unlike a
// generated lister it reports an absent object as nil rather than as a NotFound error, so a lookup
// never allocates: Filter and Score call it once per node.
type Store[T any] struct {
	indexer cache.Indexer
}

// NewStore wraps an indexer that holds *T objects keyed by name (cluster-scoped objects).
func NewStore[T any](indexer cache.Indexer) Store[T] {
	return Store[T]{indexer: indexer}
}

// Get returns the object named name, or nil when there is none.
func (s Store[T]) Get(name string) (*T, error) {
	obj, ok, err := s.indexer.GetByKey(name)
	if err != nil || !ok {
		return nil, err
	}
	t, ok := obj.(*T)
	if !ok {
		return nil, fmt.Errorf("object %q in the cache has type %T", name, obj)
	}
	return t, nil
}
