package main

import (
	"testing"

	"github.com/accord-sched/accord/test/guide"
)

// TestGuideSnippetIsTheExample: the "Write a plugin" guide in pkg/descheduler/README.md shows this
// program's code, line for line, so the snippet a reader copies is the one that is built and run
// (TestOutOfTreeExampleRuns in test/integration/descheduler).
func TestGuideSnippetIsTheExample(t *testing.T) {
	guide.SnippetIsIn(t, "../../../pkg/descheduler/README.md", "Build your own binary with `WithPlugin`", "main.go")
}
