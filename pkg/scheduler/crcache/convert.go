package crcache

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
)

// ClusterScopedResourceResource is the EventResource under which the scheduler reports
// ClusterScopedResource events to QueueingHints ("<plural>.<version>.<group>").
const ClusterScopedResourceResource = "clusterscopedresources.v1alpha1." + schedv1alpha1.GroupName

// NodeMetricResource is the EventResource under which the scheduler reports NodeMetric events.
const NodeMetricResource = "nodemetrics.v1alpha1." + slov1alpha1.GroupName

// ToClusterScopedResource turns an event object into a typed ClusterScopedResource. The scheduler
// hands QueueingHints custom resources as *unstructured.Unstructured (from its dynamic informers);
// typed objects and tombstones are accepted too. nil gives nil.
func ToClusterScopedResource(obj any) (*schedv1alpha1.ClusterScopedResource, error) {
	out := &schedv1alpha1.ClusterScopedResource{}
	ok, err := convert(obj, out)
	if !ok || err != nil {
		return nil, err
	}
	return out, nil
}

// ToNodeMetric turns an event object into a typed NodeMetric; see ToClusterScopedResource.
func ToNodeMetric(obj any) (*slov1alpha1.NodeMetric, error) {
	out := &slov1alpha1.NodeMetric{}
	ok, err := convert(obj, out)
	if !ok || err != nil {
		return nil, err
	}
	return out, nil
}

func convert[T any, PT interface {
	*T
	runtime.Object
}](obj any, out PT) (bool, error) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	switch o := obj.(type) {
	case nil:
		return false, nil
	case PT:
		if o == nil {
			return false, nil
		}
		*out = *o
		return true, nil
	case *unstructured.Unstructured:
		if o == nil {
			return false, nil
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.UnstructuredContent(), out); err != nil {
			return false, fmt.Errorf("converting %s %q: %w", o.GetKind(), o.GetName(), err)
		}
		return true, nil
	default:
		return false, fmt.Errorf("unexpected object of type %T, want %T", obj, out)
	}
}
