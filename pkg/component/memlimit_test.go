package component

import (
	"os"
	"runtime/debug"
	"testing"
	"testing/fstest"
)

func TestCgroupMemoryLimit(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s + "\n")} }
	for _, tc := range []struct {
		name       string
		root       fstest.MapFS
		procCgroup string
		want       int64
		from       string
	}{
		{
			name:       "v2 in a cgroup namespace (a container): the mount's root is the container's cgroup",
			root:       fstest.MapFS{"cgroup.controllers": file("cpu memory"), "memory.max": file("536870912")},
			procCgroup: "0::/\n",
			want:       512 << 20, from: "/sys/fs/cgroup/memory.max",
		},
		{
			name: "v2 without a namespace: the smallest limit on the path (the pod's below the container's)",
			root: fstest.MapFS{"cgroup.controllers": file("cpu memory"),
				"kubepods/memory.max":                file("max"),
				"kubepods/pod1/memory.max":           file("1073741824"),
				"kubepods/pod1/container/memory.max": file("2147483648"),
			},
			procCgroup: "0::/kubepods/pod1/container\n",
			want:       1 << 30, from: "/sys/fs/cgroup/kubepods/pod1/memory.max",
		},
		{
			name:       "v2 without a limit",
			root:       fstest.MapFS{"cgroup.controllers": file("cpu memory"), "user.slice/memory.max": file("max")},
			procCgroup: "0::/user.slice\n",
			want:       0,
		},
		{
			name: "v1: memory.limit_in_bytes; the kernel's 'unlimited' is no limit",
			root: fstest.MapFS{"memory/memory.limit_in_bytes": file("9223372036854771712"),
				"memory/docker/abc/memory.limit_in_bytes": file("268435456")},
			procCgroup: "12:memory:/docker/abc\n11:cpu,cpuacct:/docker/abc\n",
			want:       256 << 20, from: "/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes",
		},
		{
			name:       "v1 without a limit",
			root:       fstest.MapFS{"memory/memory.limit_in_bytes": file("9223372036854771712")},
			procCgroup: "4:memory:/\n",
			want:       0,
		},
		{
			name: "hybrid: v2 mounted without the memory controller, v1 has it",
			root: fstest.MapFS{"unified/cgroup.controllers": file(""),
				"memory/system.slice/memory.limit_in_bytes": file("104857600")},
			procCgroup: "0::/system.slice\n5:memory:/system.slice\n",
			want:       100 << 20, from: "/sys/fs/cgroup/memory/system.slice/memory.limit_in_bytes",
		},
		{
			name:       "no cgroup",
			root:       fstest.MapFS{},
			procCgroup: "",
			want:       0,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, from, err := cgroupMemoryLimit(tc.root, tc.procCgroup)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || from != tc.from {
				t.Errorf("cgroupMemoryLimit = %d from %q, want %d from %q", got, from, tc.want, tc.from)
			}
		})
	}
	if _, _, err := cgroupMemoryLimit(fstest.MapFS{"cgroup.controllers": file("memory"), "memory.max": file("lots")}, "0::/\n"); err == nil {
		t.Error("a limit that is not a number passed")
	}
}

func TestSetMemoryLimitFromCgroupLeavesAnExplicitGOMEMLIMIT(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "1GiB")
	if limit, from, err := SetMemoryLimitFromCgroup(); err != nil || limit != 0 || from != "GOMEMLIMIT is set" {
		t.Errorf("SetMemoryLimitFromCgroup with GOMEMLIMIT set = %d, %q, %v; want it left alone", limit, from, err)
	}
}

func TestSetGCPercentIfUnset(t *testing.T) {
	initial := debug.SetGCPercent(100)
	defer debug.SetGCPercent(initial)

	t.Setenv("GOGC", "200")
	if SetGCPercentIfUnset(50) {
		t.Error("SetGCPercentIfUnset with GOGC=200 set the percentage; an explicit GOGC must win")
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set, the percentage became %d, want it left at 100", got)
	}

	if err := os.Unsetenv("GOGC"); err != nil { // t.Setenv above restores it after the test
		t.Fatal(err)
	}
	if !SetGCPercentIfUnset(50) {
		t.Error("SetGCPercentIfUnset without GOGC did not report setting the percentage")
	}
	if got := debug.SetGCPercent(100); got != 50 {
		t.Errorf("without GOGC, the percentage is %d, want 50", got)
	}
}
