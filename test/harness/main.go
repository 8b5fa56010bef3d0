package harness

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
)

// Main starts one control plane for a test package, runs its tests and tears it down. Use it from
// TestMain:
//
//	var env *harness.Env
//	func TestMain(m *testing.M) { harness.Main(m, &env, harness.Options{}) }
//
// After the teardown it checks that the control plane left no goroutines running; a leak fails the
// package.
func Main(m *testing.M, env **Env, opts Options) {
	os.Exit(run(m, env, opts))
}

func run(m *testing.M, env **Env, opts Options) int {
	flag.Parse()
	return checkLeaks(func() int {
		e, err := Start(context.Background(), opts)
		if err != nil {
			fmt.Fprintf(os.Stderr, "harness: %v\n", err)
			return 1
		}
		*env = e
		defer func() { e.Stop(); *env = nil }()
		return m.Run()
	})
}

// MainCheckingLeaks runs the tests of a package that starts its own control planes (such as the
// playground's) and fails the package if goroutines are left running after they all stopped.
func MainCheckingLeaks(m *testing.M) {
	flag.Parse()
	os.Exit(checkLeaks(m.Run))
}

func checkLeaks(run func() int) int {
	before := goroutineSnapshot()
	code := run()
	if leaked := waitForGoroutines(before); len(leaked) > 0 {
		fmt.Fprintf(os.Stderr, "harness: %d goroutines left running after the control plane stopped:\n%s\n", len(leaked), joinStacks(leaked))
		if code == 0 {
			code = 1
		}
	}
	return code
}
