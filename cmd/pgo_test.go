package cmd

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/accord-sched/accord/pkg/scheduler/plugins/loadaware"
	"github.com/accord-sched/accord/pkg/scheduler/plugins/nodecrdresourcefit"
)

// schedulerPGO is the CPU profile every `go build ./cmd/scheduler` uses for profile-guided
// optimisation (-pgo=auto picks up default.pgo beside the main package); hack/pgo-profile.sh
// regenerates it.
const schedulerPGO = "scheduler/default.pgo"

// TestSchedulerPGOProfile fails when cmd/scheduler/default.pgo is not what hack/pgo-profile.sh makes:
// a CPU profile of accord-scheduler scheduling pods with the shipped profile. Its samples must pass
// through the Filter and Score of both Accord plugins of that profile and through kube-scheduler's
// Filter and Score loops; the plugins' names are taken from the code itself, so renaming or moving one
// fails here until the profile is taken again (a profile that names no current function optimises
// nothing, silently).
func TestSchedulerPGOProfile(t *testing.T) {
	f, err := os.Open(filepath.FromSlash(schedulerPGO))
	if err != nil {
		t.Fatalf("%v (regenerate it with hack/pgo-profile.sh)", err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatalf("%s: %v", schedulerPGO, err)
	}
	cpu := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			cpu = i
		}
	}
	if cpu < 0 {
		t.Fatalf("%s: no cpu/nanoseconds sample type (has %v): not a CPU profile", schedulerPGO, p.SampleType)
	}
	if d := time.Duration(p.DurationNanos); d < 20*time.Second {
		t.Errorf("%s covers %s of profiling; want at least 20s of a scheduling run", schedulerPGO, d)
	}

	funcName := func(fn any) string { return runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name() }
	want := []string{
		funcName((*nodecrdresourcefit.Plugin).Filter),
		funcName((*nodecrdresourcefit.Plugin).Score),
		funcName((*loadaware.Plugin).Filter),
		funcName((*loadaware.Plugin).Score),
		"k8s.io/kubernetes/pkg/scheduler/framework/runtime.(*frameworkImpl).RunFilterPlugins",
		"k8s.io/kubernetes/pkg/scheduler/framework/runtime.(*frameworkImpl).runScorePlugin",
	}
	// cum[name]: CPU of the samples whose stack holds the function (each sample counted once).
	cum := map[string]int64{}
	var total int64
	for _, s := range p.Sample {
		v := s.Value[cpu]
		total += v
		seen := map[string]bool{}
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				if line.Function != nil && !seen[line.Function.Name] {
					seen[line.Function.Name] = true
					cum[line.Function.Name] += v
				}
			}
		}
	}
	if total == 0 {
		t.Fatalf("%s has no CPU samples", schedulerPGO)
	}
	var missing []string
	for _, name := range want {
		// Below 0.5% of the samples a function is not hot for PGO: the profile was not taken while
		// the shipped profile scheduled pods.
		if share := float64(cum[name]) / float64(total); share < 0.005 {
			missing = append(missing, name)
		} else {
			t.Logf("%s: %.1f%% of the samples", name, 100*share)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%s is not a profile of accord-scheduler scheduling with the shipped profile: under 0.5%% of its CPU passes through\n  %s\nregenerate it with hack/pgo-profile.sh", schedulerPGO, strings.Join(missing, "\n  "))
	}
}
