package harness

import (
	"context"
	"os/exec"
	"path"
	"path/filepath"
	"testing"
	"time"
)

// BuildBinary builds the Go command pkg (an import path, e.g.
// "github.com/accord-sched/accord/cmd/descheduler") into a temporary directory and returns the
// binary's path, so a test runs the program a user runs. The build shares the Go build cache, so a
// package built before costs a link.
func BuildBinary(t testing.TB, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), path.Base(pkg))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}
