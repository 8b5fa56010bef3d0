package harness

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path"
	"path/filepath"
	"testing"
	"time"
)

// BuildBinary builds the Go command pkg (an import path, e.g.
// "github.com/accord-sched/accord/cmd/descheduler") into a temporary directory and returns the
// binary's path, so a test runs the program a user runs. The build shares the Go build cache, so a
// package built before costs a link. A command with a default.pgo (accord-scheduler) is built with
// it, as `make build` and the images build it: the first such build compiles every dependency again
// with the profile (about three minutes on two idle cores), hence the deadline.
func BuildBinary(t testing.TB, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), path.Base(pkg))
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	start := time.Now()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s (deadline %s): %v\n%s", pkg, buildTimeout, err, out)
	}
	if took := time.Since(start); took > time.Minute {
		t.Logf("go build %s took %s", pkg, took.Round(time.Second))
	}
	return bin
}

// buildTimeout bounds BuildBinary's go build: a cold build of accord-scheduler with its profile on a
// loaded two-core CI machine.
const buildTimeout = 15 * time.Minute

// StartBinary starts bin with args until the test ends (or ctx does) and returns its combined
// output, which is logged when the test has failed.
func StartBinary(t testing.TB, ctx context.Context, bin string, args ...string) *bytes.Buffer {
	t.Helper()
	_, out := StartProcess(t, ctx, bin, args...)
	return out
}

// StartProcess is StartBinary that also returns the running command, for a test that reads the
// process's resource usage (/proc/<pid>) while it runs. The output buffer is written while the
// process runs: read it only after the process has exited.
func StartProcess(t testing.TB, ctx context.Context, bin string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	return StartProcessEnv(t, ctx, nil, bin, args...)
}

// StartProcessEnv is StartProcess with the process's environment env (nil: the test's own, as
// exec.Cmd.Env), e.g. the test's with GODEBUG=gctrace=1 appended.
func StartProcessEnv(t testing.TB, ctx context.Context, env []string, bin string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	out := &bytes.Buffer{}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(bin), out.String())
		}
	})
	return cmd, out
}

// RunBinary runs bin with args to its end (at most timeout) and returns its combined output and
// exit code, for a test of a command-line tool's answer and exit status.
func RunBinary(t testing.TB, timeout time.Duration, bin string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s %v: not finished within %v\n%s", filepath.Base(bin), args, timeout, out)
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	case err != nil:
		t.Fatalf("%s %v: %v", filepath.Base(bin), args, err)
	}
	return string(out), 0
}
