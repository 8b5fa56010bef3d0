package localcluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/kubernetes/pkg/controller/deployment"
	"k8s.io/kubernetes/pkg/controller/disruption"
	"k8s.io/kubernetes/pkg/controller/namespace"
	"k8s.io/kubernetes/pkg/controller/replicaset"
	"k8s.io/kubernetes/pkg/controller/statefulset"
)

// startWorkloadControllers runs kube-controller-manager's Deployment, ReplicaSet, StatefulSet,
// Namespace and Disruption controllers in this process, so that evicted pods are recreated, deleted namespaces are
// emptied and PodDisruptionBudgets have a status (without it the Eviction API refuses every eviction
// a PDB covers) as in a real cluster. The returned function stops them and waits for them.
func startWorkloadControllers(ctx context.Context, cfg *rest.Config) (func(), error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "accord-localcluster-controllers"
	cfg.QPS, cfg.Burst = 500, 1000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactory(client, 0)
	rsc := replicaset.NewReplicaSetController(ctx,
		factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(), client, replicaset.BurstReplicas)
	dc, err := deployment.NewDeploymentController(ctx,
		factory.Apps().V1().Deployments(), factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(), client)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("creating the deployment controller: %w", err)
	}
	// A StatefulSet recreates a pod only once the old one is gone, which with the node simulator's
	// honest termination is after its grace period.
	ssc := statefulset.NewStatefulSetController(ctx, factory.Core().V1().Pods(), factory.Apps().V1().StatefulSets(),
		factory.Core().V1().PersistentVolumeClaims(), factory.Apps().V1().ControllerRevisions(), client)
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		cancel()
		return nil, err
	}
	nsc := namespace.NewNamespaceController(ctx, client, meta, client.Discovery().ServerPreferredNamespacedResources,
		factory.Core().V1().Namespaces(), 5*time.Minute, corev1.FinalizerKubernetes)
	// The Disruption controller finds the scale of a PDB's pods' controller through discovery and the
	// scale subresource for controllers it does not know.
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery()))
	scales, err := scale.NewForConfig(cfg, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(client.Discovery()))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("creating the scale client of the disruption controller: %w", err)
	}
	dis := disruption.NewDisruptionController(ctx, factory.Core().V1().Pods(), factory.Policy().V1().PodDisruptionBudgets(),
		factory.Core().V1().ReplicationControllers(), factory.Apps().V1().ReplicaSets(), factory.Apps().V1().Deployments(),
		factory.Apps().V1().StatefulSets(), client, mapper, scales, client.Discovery())
	factory.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Go(func() { dis.Run(ctx) })
	wg.Go(func() { rsc.Run(ctx, 2) })
	wg.Go(func() { dc.Run(ctx, 2) })
	wg.Go(func() { ssc.Run(ctx, 2) })
	wg.Go(func() { nsc.Run(ctx, 2) })
	return func() {
		cancel()
		wg.Wait()
		factory.Shutdown()
	}, nil
}
