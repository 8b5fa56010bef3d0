// Package reservation tests, on a real control plane (test/harness), what holding a predicted place
// needs: the node simulator's honest termination (a deleted pod stays Terminating for its grace
// period, and a StatefulSet recreates it only then).
package reservation

import (
	"testing"

	"github.com/accord-sched/accord/test/harness"
)

var env *harness.Env

func TestMain(m *testing.M) { harness.Main(m, &env, harness.Options{}) }
