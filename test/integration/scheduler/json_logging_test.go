package scheduler

import (
	"bufio"
	"context"
	"encoding/json"
	osexec "os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/accord-sched/accord/test/harness"
)

// TestSchedulerBinaryJSONLogging builds the real accord-scheduler binary and runs it against the
// control plane with --logging-format=json (as kube-scheduler accepts): it starts, and every line
// it writes is a JSON log object, until it reports that it is serving.
func TestSchedulerBinaryJSONLogging(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := harness.BuildBinary(t, "github.com/accord-sched/accord/cmd/scheduler")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	run := osexec.CommandContext(ctx, bin, "--kubeconfig="+kubeconfig, "--leader-elect=false", "--secure-port=0",
		"--logging-format=json", "-v=2")
	stdout, err := run.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	run.Stderr = run.Stdout
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	done, finished := make(chan struct{}), make(chan struct{})
	defer func() {
		close(done)
		_ = run.Process.Kill()
		<-finished // the reader returns once the pipe closes
		_ = run.Wait()
	}()

	type line struct {
		obj map[string]any
		raw string
		err error
	}
	lines := make(chan line)
	go func() {
		defer close(finished)
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 1<<20), 1<<20)
		for sc.Scan() {
			var obj map[string]any
			err := json.Unmarshal(sc.Bytes(), &obj)
			select {
			case lines <- line{obj, sc.Text(), err}:
			case <-done:
				return
			}
		}
	}()
	n := 0
	deadline := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("accord-scheduler exited after %d JSON lines", n)
			}
			if l.err != nil {
				t.Fatalf("line %d is not a JSON object: %v\n%s", n+1, l.err, l.raw)
			}
			if _, ok := l.obj["ts"]; !ok {
				t.Fatalf("JSON log line without ts: %s", l.raw)
			}
			n++
			// Logged once the informers have synced and scheduling starts.
			if msg, _ := l.obj["msg"].(string); msg == "Starting Kubernetes Scheduler" {
				t.Logf("%d JSON log lines, last %q", n, msg)
				return
			}
		case <-deadline:
			t.Fatalf("only %d JSON lines within 60s", n)
		}
	}
}
