package harness

import (
	"bytes"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"
)

// processWide lists functions whose goroutines live for the whole process by design of the library
// that starts them, however many control planes come and go. A goroutine running one of them, or
// started (directly or not) by one of them, is not a leak of the harness.
var processWide = []string{
	// client-go's TLS transport cache starts one cert-rotation loop per client-cert config, forever.
	"k8s.io/client-go/transport.(*dynamicClientCert).run",
	// the apiserver's "log" health check starts a wait.Forever the first time it runs.
	"k8s.io/apiserver/pkg/server/healthz.(*log).Check.func1",
	"k8s.io/klog/v2.(*flushDaemon).run.func1",
	"go.opencensus.io/stats/view.(*worker).start",
	// os/signal starts its dispatch loop the first time a program asks for signals (kube-scheduler does).
	"os/signal.loop",
	"gopkg.in/natefinch/lumberjack.v2.(*Logger).millRun",
}

// apiserverStarters holds the IDs of the goroutines that constructed a kube-apiserver. The apiserver
// starts some controllers' queues while it is built and, when it is torn down before their Run
// begins, never shuts them down; those are upstream's, not the harness's. It is the one piece of
// process-wide state of the harness, because the leak check outlives every control plane.
var apiserverStarters sync.Map

// markAPIServerStarter records the calling goroutine as one that builds a kube-apiserver
// (localcluster.Options.OnAPIServerBuild).
func markAPIServerStarter() { apiserverStarters.Store(currentGoroutineID(), true) }

func currentGoroutineID() string {
	m := headerRE.FindStringSubmatch(string(currentStack()))
	if m == nil {
		return ""
	}
	return m[1]
}

type goroutine struct {
	id, parent, creator string
	stack               string
}

var headerRE = regexp.MustCompile(`^goroutine (\d+) `)
var createdRE = regexp.MustCompile(`(?m)^created by (\S+)(?: in goroutine (\d+))?`)

func goroutines() map[string]goroutine {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]goroutine{}
	for _, block := range bytes.Split(buf, []byte("\n\n")) {
		s := string(block)
		m := headerRE.FindStringSubmatch(s)
		if m == nil {
			continue
		}
		g := goroutine{id: m[1], stack: s}
		if c := createdRE.FindStringSubmatch(s); c != nil {
			g.creator, g.parent = c[1], c[2]
		}
		out[g.id] = g
	}
	return out
}

type snapshot map[string]goroutine

func goroutineSnapshot() snapshot { return goroutines() }

// waitForGoroutines waits up to 10 s for the goroutines started since the snapshot to end, and
// returns the stacks of those still running, leaving out the process-wide ones.
func waitForGoroutines(before snapshot) []string {
	deadline := time.Now().Add(10 * time.Second)
	for {
		leaked := leakedSince(before)
		if len(leaked) == 0 || time.Now().After(deadline) {
			return leaked
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func leakedSince(before snapshot) []string {
	now := goroutines()
	self := now[currentGoroutineID()]
	var ignored func(g goroutine, depth int) bool
	ignored = func(g goroutine, depth int) bool {
		for _, f := range processWide {
			if strings.Contains(g.stack, "\n"+f+"(") || g.creator == f {
				return true
			}
		}
		if _, ok := apiserverStarters.Load(g.parent); ok {
			return true
		}
		if p, ok := now[g.parent]; ok && depth < 20 {
			return ignored(p, depth+1)
		}
		return false
	}
	var leaked []string
	for id, g := range now {
		if _, old := before[id]; old || id == self.id || ignored(g, 0) {
			continue
		}
		leaked = append(leaked, g.stack)
	}
	return leaked
}

func currentStack() []byte {
	buf := make([]byte, 256)
	return buf[:runtime.Stack(buf, false)]
}

func joinStacks(s []string) string { return strings.Join(s, "\n\n") }
