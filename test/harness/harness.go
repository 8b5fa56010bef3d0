// Package harness is the test-side entry point to a real Kubernetes control plane running inside the
// test process (pkg/demo/localcluster: an embedded etcd, a kube-apiserver, the Deployment, ReplicaSet and
// Namespace controllers and a node simulator, with Accord's CRDs installed). It adds what only tests
// need: Main, which runs a package's tests against one control plane and fails the package on leaked
// goroutines, and helpers that take a testing.TB.
//
// One control plane serves a whole test package: start it in TestMain with Main, and give every test
// its own namespace (Env.CreateNamespace) so tests can run repeatedly (-count=2) against it.
package harness

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/rest"

	"github.com/accord-sched/accord/pkg/demo/localcluster"
)

// Options tune a control plane (see localcluster.Options).
type Options = localcluster.Options

// NodeSimulator plays the kubelet for simulated nodes (see localcluster.NodeSimulator).
type NodeSimulator = localcluster.NodeSimulator

// NodeSpec describes a simulated node (see localcluster.NodeSpec).
type NodeSpec = localcluster.NodeSpec

// SimulatedNodeLabel marks the nodes the NodeSimulator plays the kubelet for.
const SimulatedNodeLabel = localcluster.SimulatedNodeLabel

// SimulatedKubeletVersion is the kubelet version simulated nodes report.
const SimulatedKubeletVersion = localcluster.SimulatedKubeletVersion

// InstallCRDs creates (or updates) every CRD in manifests/crds and waits until each is Established
// and its resource is served.
func InstallCRDs(ctx context.Context, cfg *rest.Config) error {
	return localcluster.InstallCRDs(ctx, cfg)
}

// Env is a running control plane: the fields (Config, Client, Accord, Nodes) and methods (CRConfig,
// WriteKubeconfig, Stop) of localcluster.Cluster, plus test helpers.
type Env struct {
	*localcluster.Cluster
}

// Start brings up a control plane whose kube-apiserver's goroutines the leak check attributes to
// upstream (see Main). Call Stop to tear it down; a failed Start cleans up after itself.
func Start(ctx context.Context, opts Options) (*Env, error) {
	if opts.OnAPIServerBuild == nil {
		opts.OnAPIServerBuild = markAPIServerStarter
	}
	c, err := localcluster.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &Env{Cluster: c}, nil
}

// WaitFor polls cond every 20 ms until it returns true, an error, or timeout passes.
func WaitFor(ctx context.Context, timeout time.Duration, cond func(ctx context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		ok, err := cond(ctx)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("condition not met within %s", timeout)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
