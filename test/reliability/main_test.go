// Package reliability holds Accord's promises under faults on the real control plane
// (pkg/demo/localcluster through test/harness): evictions of recreated or terminating pods, eviction races,
// a failing apiserver, bursts of violators. Each case asserts its property and prints its figure as a
// line `FIGURE <name>: <value>` (go test -v ./test/reliability | grep FIGURE).
package reliability

import (
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/accord-sched/accord/test/harness"
)

var env *harness.Env

func TestMain(m *testing.M) {
	// kube-scheduler, when a case runs it in-process, listens for SIGUSR2; start Go's signal goroutine
	// before the harness takes its goroutine baseline, as it lives on.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR2)
	signal.Stop(sig)
	harness.Main(m, &env, harness.Options{
		// Each eviction otherwise waits on the PDB watch cache (see /work/shared facts); the PDB case
		// evicts many pods.
		APIServerFlags: []string{"--watch-cache-sizes=poddisruptionbudgets.policy#0"},
	})
}
