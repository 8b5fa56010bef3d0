package descheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/controller"
)

// VictimLabel marks the pods the test plugins evict.
const VictimLabel = "test.accord.dev/victim"

// labelEvictor is a Deschedule plugin evicting, on the nodes it is given, the pods labelled victim
// that pass the profile's filters. It records every Evict result.
type labelEvictor struct {
	h       framework.Handle
	mu      sync.Mutex
	results map[string]error
}

var _ framework.DeschedulePlugin = &labelEvictor{}

func (p *labelEvictor) Name() string { return "LabelEvictor" }

func (p *labelEvictor) Deschedule(ctx context.Context, nodes []*corev1.Node) *framework.Status {
	ev := p.h.Evictor()
	for _, n := range nodes {
		pods, err := p.h.GetPodsAssignedToNode(n.Name, func(pod *corev1.Pod) bool { return pod.Labels[VictimLabel] == "true" && ev.Filter(pod) })
		if err != nil {
			return framework.NewStatus(err)
		}
		for _, pod := range pods {
			if !ev.PreEvictionFilter(pod) {
				continue
			}
			err := ev.Evict(ctx, pod, framework.EvictOptions{PluginName: p.Name(), Reason: "labelled victim"})
			p.mu.Lock()
			p.results[pod.Namespace+"/"+pod.Name] = err
			p.mu.Unlock()
			if framework.IsTotalLimit(err) {
				return nil
			}
		}
	}
	return nil
}

// victimController is an event-triggered plugin: a pod becomes a violator when it gets the victim
// label, and is evicted through a rate-limited workqueue.
type victimController struct {
	h     framework.Handle
	queue *controller.Queue
}

var _ framework.Controller = &victimController{}

func newVictimController(_ context.Context, _ runtime.Object, h framework.Handle) (framework.Plugin, error) {
	c := &victimController{h: h}
	c.queue = controller.NewQueue("VictimController", c.reconcile)
	pods := h.SharedInformerFactory().Core().V1().Pods()
	if _, err := pods.Informer().AddEventHandler(c.queue.EventHandler(func(obj any) bool {
		pod, ok := obj.(*corev1.Pod)
		return ok && pod.Labels[VictimLabel] == "true" && pod.DeletionTimestamp == nil
	})); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *victimController) Name() string { return "VictimController" }

func (c *victimController) Run(ctx context.Context) { c.queue.Run(ctx, 2) }

func (c *victimController) reconcile(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := c.h.SharedInformerFactory().Core().V1().Pods().Lister().Pods(ns).Get(name)
	if err != nil || pod.DeletionTimestamp != nil || pod.Labels[VictimLabel] != "true" {
		return nil // gone or no longer a violator
	}
	// Like a cycle, a controller acts only on the profile's nodes.
	node, err := c.h.SharedInformerFactory().Core().V1().Nodes().Lister().Get(pod.Spec.NodeName)
	if err != nil || !c.h.NodeSelector().Matches(labels.Set(node.Labels)) {
		return nil
	}
	ev := c.h.Evictor()
	if !ev.Filter(pod) || !ev.PreEvictionFilter(pod) {
		return nil
	}
	err = ev.Evict(ctx, pod, framework.EvictOptions{PluginName: c.Name(), Reason: "became a victim"})
	if err == nil || errors.Is(err, framework.ErrDryRun) || framework.IsPodGone(err) {
		return nil
	}
	klog.FromContext(ctx).Info("Eviction not done, will retry", "pod", key, "err", err)
	return fmt.Errorf("evicting %s: %w", key, err)
}
