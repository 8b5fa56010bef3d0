// Package cmd holds a test over the commands: the binaries Accord ships build from product code only.
package cmd

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestCommandsImportNoTestCode fails when a command depends on the testing package or on any package
// under a test/ directory (Accord's own test/ or k8s.io/kubernetes/test/...): test code must not run
// in the product (make run included).
func TestCommandsImportNoTestCode(t *testing.T) {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goTool, "list", "-deps", "./...").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list -deps ./...: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list -deps ./...: %v", err)
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) < 100 {
		t.Fatalf("go list -deps ./... listed %d packages; expected the commands' whole dependency graph", len(pkgs))
	}
	var bad []string
	for _, p := range pkgs {
		if p == "testing" || strings.HasPrefix(p, "testing/") || strings.Contains(p, "/test/") || strings.HasSuffix(p, "/test") {
			bad = append(bad, p)
		}
	}
	if len(bad) > 0 {
		t.Errorf("the commands depend on test code:\n  %s\nfind who imports each with: go list -deps -f '{{.ImportPath}}: {{.Imports}}' ./cmd/...", strings.Join(bad, "\n  "))
	}
}
