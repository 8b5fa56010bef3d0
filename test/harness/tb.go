package harness

import (
	"fmt"
	"os"
	"sync"

	"k8s.io/klog/v2"
)

// procTB lets the apiserver test server run outside a *testing.T (in TestMain and in the
// playground). It satisfies ktesting.TB: logs go to klog at a high verbosity, cleanups run on Stop,
// and a fatal call panics with a fatalError that Start turns back into an error.
type procTB struct {
	mu       sync.Mutex
	name     string
	failed   bool
	cleanups []func()
}

type fatalError struct{ msg string }

func (e fatalError) Error() string { return e.msg }

func (t *procTB) Attr(key, value string)     {}
func (t *procTB) Chdir(dir string)           { panic(fatalError{"Chdir is not supported by the harness"}) }
func (t *procTB) Setenv(key, value string)   { _ = os.Setenv(key, value) }
func (t *procTB) Helper()                    {}
func (t *procTB) Name() string               { return t.name }
func (t *procTB) Log(args ...any)            { klog.V(5).Info(fmt.Sprint(args...)) }
func (t *procTB) Logf(f string, args ...any) { klog.V(5).Infof(f, args...) }
func (t *procTB) Error(args ...any)          { t.fail(); klog.Error(args...) }
func (t *procTB) Errorf(f string, a ...any)  { t.fail(); klog.Errorf(f, a...) }
func (t *procTB) Fail()                      { t.fail() }
func (t *procTB) FailNow()                   { t.fail(); panic(fatalError{"FailNow called"}) }
func (t *procTB) Fatal(args ...any)          { t.fail(); panic(fatalError{fmt.Sprint(args...)}) }
func (t *procTB) Fatalf(f string, a ...any)  { t.fail(); panic(fatalError{fmt.Sprintf(f, a...)}) }
func (t *procTB) Skip(args ...any)           { panic(fatalError{"Skip is not supported by the harness"}) }
func (t *procTB) Skipf(f string, a ...any) {
	panic(fatalError{"Skipf is not supported by the harness"})
}
func (t *procTB) SkipNow()      { panic(fatalError{"SkipNow is not supported by the harness"}) }
func (t *procTB) Skipped() bool { return false }

func (t *procTB) TempDir() string {
	dir, err := os.MkdirTemp("", "accord-harness-")
	if err != nil {
		panic(fatalError{err.Error()})
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func (t *procTB) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

func (t *procTB) fail() {
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
}

func (t *procTB) Cleanup(f func()) {
	t.mu.Lock()
	t.cleanups = append(t.cleanups, f)
	t.mu.Unlock()
}

// runCleanups runs the registered cleanups last-in first-out, as testing.T does.
func (t *procTB) runCleanups() {
	t.mu.Lock()
	cs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
}
