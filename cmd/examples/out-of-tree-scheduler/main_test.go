package main

import (
	"testing"

	"github.com/accord-sched/accord/test/guide"
)

// TestGuideSnippetIsTheExample: the "Build your own scheduler" guide in pkg/scheduler/README.md
// shows this program's code, line for line; TestOutOfTreeSchedulerExampleRuns
// (test/integration/scheduler) builds it and schedules a pod with it.
func TestGuideSnippetIsTheExample(t *testing.T) {
	guide.SnippetIsIn(t, "../../../pkg/scheduler/README.md", "Build your own scheduler with `WithPlugin`", "main.go")
}
