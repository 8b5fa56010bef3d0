package harness

import (
	"fmt"

	"k8s.io/apiserver/pkg/storage/storagebackend"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
	"k8s.io/kubernetes/test/utils/ktesting"
	"k8s.io/kubernetes/test/utils/ktesting/initoption"
)

// defaultAPIServerFlags are the flags every harness apiserver gets:
//   - no endpoint reconciler: there is one apiserver and it does not need a kubernetes Service;
//   - no ServiceAccount admission: pods need no token secret;
//   - no TaintNodesByCondition: new simulated nodes are not tainted not-ready before the simulator
//     reports them Ready;
//   - no PDB watch cache: each eviction would otherwise wait on it (~100 ms).
var defaultAPIServerFlags = []string{
	"--endpoint-reconciler-type=none",
	"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
	"--watch-cache-sizes=poddisruptionbudgets.policy#0",
}

// startAPIServer runs a real kube-apiserver in this process against the etcd at etcdURL.
func startAPIServer(tb *procTB, etcdURL string, extraFlags []string) (*kubeapiservertesting.TestServer, error) {
	storage := storagebackend.NewDefaultConfig("/registry", nil)
	storage.Transport.ServerList = []string{etcdURL}

	flags := append(append([]string{}, defaultAPIServerFlags...), extraFlags...)
	// The test server logs through the TB it is given; route that to klog instead of per-test output.
	tCtx := ktesting.Init(tb, initoption.PerTestOutput(false))

	// Start it from a goroutine of its own, so that the goroutines the apiserver's construction starts
	// can be told apart from the harness's own in the leak check (see apiserverStarters).
	type result struct {
		s   kubeapiservertesting.TestServer
		err error
	}
	done := make(chan result, 1)
	go func() {
		apiserverStarters.Store(currentGoroutineID(), true)
		defer func() {
			if r := recover(); r != nil {
				fe, ok := r.(fatalError)
				if !ok {
					panic(r)
				}
				done <- result{err: fe}
			}
		}()
		s, err := kubeapiservertesting.StartTestServer(tCtx, nil, flags, storage)
		done <- result{s, err}
	}()
	r := <-done
	if r.err != nil {
		return nil, fmt.Errorf("starting kube-apiserver: %w", r.err)
	}
	return &r.s, nil
}
