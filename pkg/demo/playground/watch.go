package playground

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/pkg/demo/localcluster"
)

// watchPods logs what happens to pods, so `make run` shows placements and evictions as they happen.
func watchPods(ctx context.Context, env *localcluster.Cluster, wg *sync.WaitGroup) error {
	logger := klog.FromContext(ctx).WithName("pods")
	factory := informers.NewSharedInformerFactory(env.Client, 0)
	_, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			old, pod := oldObj.(*corev1.Pod), newObj.(*corev1.Pod)
			if old.Spec.NodeName == "" && pod.Spec.NodeName != "" {
				logger.Info("Pod placed", "pod", klog.KObj(pod), "node", pod.Spec.NodeName, "scheduler", pod.Spec.SchedulerName)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				logger.Info("Pod gone", "pod", klog.KObj(pod), "node", pod.Spec.NodeName)
			}
		},
	})
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("pod watcher: %v cache did not sync", typ)
		}
	}
	wg.Go(func() {
		<-ctx.Done()
		factory.Shutdown()
	})
	return nil
}
