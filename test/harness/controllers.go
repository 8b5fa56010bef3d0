package harness

import (
	"context"
	"fmt"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/pkg/controller/deployment"
	"k8s.io/kubernetes/pkg/controller/replicaset"
)

// startWorkloadControllers runs kube-controller-manager's Deployment and ReplicaSet controllers in
// this process, so that evicted pods are recreated as in a real cluster. They stop with ctx.
func startWorkloadControllers(ctx context.Context, cfg *rest.Config) (func(), error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "accord-harness-controllers"
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
	factory.Start(ctx.Done())
	done := make(chan struct{}, 2)
	go func() { rsc.Run(ctx, 2); done <- struct{}{} }()
	go func() { dc.Run(ctx, 2); done <- struct{}{} }()
	return func() {
		cancel()
		<-done
		<-done
		factory.Shutdown()
	}, nil
}
