package descheduler

import (
	"context"
	osexec "os/exec"
	"testing"
	"time"
)

func exec(t *testing.T, name string, args ...string) *osexec.Cmd {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return osexec.CommandContext(ctx, name, args...)
}
