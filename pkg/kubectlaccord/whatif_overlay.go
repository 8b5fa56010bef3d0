package kubectlaccord

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	accordclient "github.com/accord-sched/accord/pkg/generated/clientset/versioned"
	schedtyped "github.com/accord-sched/accord/pkg/generated/clientset/versioned/typed/scheduling/v1alpha1"
	slotyped "github.com/accord-sched/accord/pkg/generated/clientset/versioned/typed/slo/v1alpha1"
)

// overlay is the objects of a what-if file, by name, that stand in place of the live ones (or are
// added when no live object has their name).
type overlay struct {
	crs map[string]*schedv1alpha1.ClusterScopedResource
	nms map[string]*slov1alpha1.NodeMetric
}

// wrap returns c with the overlay's objects in place of the live ones in every Get, List and Watch of
// ClusterScopedResources and NodeMetrics; everything else goes to c unchanged.
func (o *overlay) wrap(c accordclient.Interface) accordclient.Interface {
	return overlayClient{Interface: c, o: o}
}

type overlayClient struct {
	accordclient.Interface
	o *overlay
}

// IsWatchListSemanticsUnSupported makes the informers list and then watch (client-go's
// watchlist.DoesClientNotSupportWatchListSemantics): the overlay is applied to a List's items; a
// streamed initial watch would bypass it.
func (c overlayClient) IsWatchListSemanticsUnSupported() bool { return true }

func (c overlayClient) SchedulingV1alpha1() schedtyped.SchedulingV1alpha1Interface {
	return overlayScheduling{SchedulingV1alpha1Interface: c.Interface.SchedulingV1alpha1(), o: c.o}
}

func (c overlayClient) SloV1alpha1() slotyped.SloV1alpha1Interface {
	return overlaySlo{SloV1alpha1Interface: c.Interface.SloV1alpha1(), o: c.o}
}

type overlayScheduling struct {
	schedtyped.SchedulingV1alpha1Interface
	o *overlay
}

func (s overlayScheduling) ClusterScopedResources() schedtyped.ClusterScopedResourceInterface {
	return overlayCRs{ClusterScopedResourceInterface: s.SchedulingV1alpha1Interface.ClusterScopedResources(), objs: s.o.crs}
}

type overlaySlo struct {
	slotyped.SloV1alpha1Interface
	o *overlay
}

func (s overlaySlo) NodeMetrics() slotyped.NodeMetricInterface {
	return overlayNMs{NodeMetricInterface: s.SloV1alpha1Interface.NodeMetrics(), objs: s.o.nms}
}

type overlayCRs struct {
	schedtyped.ClusterScopedResourceInterface
	objs map[string]*schedv1alpha1.ClusterScopedResource
}

func (c overlayCRs) Get(ctx context.Context, name string, opts metav1.GetOptions) (*schedv1alpha1.ClusterScopedResource, error) {
	if o, ok := c.objs[name]; ok {
		return o.DeepCopy(), nil
	}
	return c.ClusterScopedResourceInterface.Get(ctx, name, opts)
}

func (c overlayCRs) List(ctx context.Context, opts metav1.ListOptions) (*schedv1alpha1.ClusterScopedResourceList, error) {
	l, err := c.ClusterScopedResourceInterface.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	l.Items, err = overlaid(l.Items, c.objs, opts.LabelSelector)
	return l, err
}

func (c overlayCRs) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := c.ClusterScopedResourceInterface.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	return hideOverlaid(w, func(name string) bool { _, ok := c.objs[name]; return ok }), nil
}

type overlayNMs struct {
	slotyped.NodeMetricInterface
	objs map[string]*slov1alpha1.NodeMetric
}

func (c overlayNMs) Get(ctx context.Context, name string, opts metav1.GetOptions) (*slov1alpha1.NodeMetric, error) {
	if o, ok := c.objs[name]; ok {
		return o.DeepCopy(), nil
	}
	return c.NodeMetricInterface.Get(ctx, name, opts)
}

func (c overlayNMs) List(ctx context.Context, opts metav1.ListOptions) (*slov1alpha1.NodeMetricList, error) {
	l, err := c.NodeMetricInterface.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	l.Items, err = overlaid(l.Items, c.objs, opts.LabelSelector)
	return l, err
}

func (c overlayNMs) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := c.NodeMetricInterface.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	return hideOverlaid(w, func(name string) bool { _, ok := c.objs[name]; return ok }), nil
}

// overlaid is live with each object of over in place of the live one of its name (keeping the live
// resourceVersion) and the rest of over, matching selector, appended.
func overlaid[T any, PT interface {
	*T
	metav1.Object
	DeepCopy() *T
}](live []T, over map[string]PT, selector string) ([]T, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(over))
	out := make([]T, 0, len(live)+len(over))
	for i := range live {
		name := PT(&live[i]).GetName()
		o, ok := over[name]
		if !ok {
			out = append(out, live[i])
			continue
		}
		seen[name] = true
		if !sel.Matches(labels.Set(o.GetLabels())) {
			continue
		}
		obj := *o.DeepCopy()
		PT(&obj).SetResourceVersion(PT(&live[i]).GetResourceVersion())
		out = append(out, obj)
	}
	for name, o := range over {
		if !seen[name] && sel.Matches(labels.Set(o.GetLabels())) {
			out = append(out, *o.DeepCopy())
		}
	}
	return out, nil
}

// hideOverlaid drops the watch events of the objects the overlay stands in for: the live object's
// changes do not replace the file's. Unlike watch.Filter, its Stop also ends a send no one receives.
func hideOverlaid(w watch.Interface, isOverlaid func(name string) bool) watch.Interface {
	hw := &hidingWatch{in: w, out: make(chan watch.Event), stop: make(chan struct{})}
	go func() {
		defer close(hw.out)
		for e := range w.ResultChan() {
			if m, ok := e.Object.(metav1.Object); ok && e.Type != watch.Bookmark && e.Type != watch.Error && isOverlaid(m.GetName()) {
				continue
			}
			select {
			case hw.out <- e:
			case <-hw.stop:
				return
			}
		}
	}()
	return hw
}

type hidingWatch struct {
	in   watch.Interface
	out  chan watch.Event
	stop chan struct{}
	once sync.Once
}

func (w *hidingWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *hidingWatch) Stop() {
	w.once.Do(func() { close(w.stop) })
	w.in.Stop()
}
