package main

import (
	"os"
	"strings"
	"testing"
)

// TestGuideSnippetIsTheExample: the "Write a plugin" guide in pkg/descheduler/README.md shows this
// program's code, line for line, so the snippet a reader copies is the one that is built and run
// (TestOutOfTreeExampleRuns in test/integration/descheduler).
func TestGuideSnippetIsTheExample(t *testing.T) {
	readme, err := os.ReadFile("../../../pkg/descheduler/README.md")
	if err != nil {
		t.Fatal(err)
	}
	main, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	const intro = "Build your own binary with `WithPlugin`"
	_, after, ok := strings.Cut(string(readme), intro)
	if !ok {
		t.Fatalf("README.md has no %q", intro)
	}
	_, block, ok := strings.Cut(after, "```go\n")
	if !ok {
		t.Fatal("no Go block after the WithPlugin introduction")
	}
	block, _, _ = strings.Cut(block, "```")
	code := map[string]bool{}
	for _, l := range strings.Split(string(main), "\n") {
		code[strings.TrimSpace(l)] = true
	}
	lines := 0
	for _, l := range strings.Split(block, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		lines++
		if !code[l] {
			t.Errorf("the guide's line %q is not in cmd/examples/out-of-tree/main.go", l)
		}
	}
	if lines < 3 {
		t.Fatalf("the guide's snippet has %d lines", lines)
	}
}
