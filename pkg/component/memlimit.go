package component

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"runtime/debug"
	"strconv"
	"strings"
)

// CgroupMemoryLimitFraction is the share of the cgroup's memory limit SetMemoryLimitFromCgroup gives
// the Go runtime as its soft limit: the rest is headroom for what the runtime does not count (the
// binary's mapped text, memory the kernel charges to the cgroup for the process).
const CgroupMemoryLimitFraction = 0.9

// SetMemoryLimitFromCgroup sets the Go runtime's soft memory limit (debug.SetMemoryLimit) to
// CgroupMemoryLimitFraction of the memory limit of the process's cgroup, when the GOMEMLIMIT
// environment variable is not set (an explicit one, as the Helm chart sets, wins) and the cgroup has
// a limit (v2 memory.max, or v1 memory.limit_in_bytes; the smallest along the cgroup's path, as the
// kernel enforces the smallest). Without it the runtime lets the heap grow to twice the live heap
// (GOGC=100) whatever the container's limit, and a container whose live heap is past half its limit
// is OOM-killed instead of collecting more often. It returns the limit set (0: none) and what it was
// derived from, for the start-up log.
func SetMemoryLimitFromCgroup() (int64, string, error) {
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		return 0, "GOMEMLIMIT is set", nil
	}
	procCgroup, err := os.ReadFile("/proc/self/cgroup")
	if errors.Is(err, fs.ErrNotExist) {
		return 0, "", nil // not Linux
	}
	if err != nil {
		return 0, "", fmt.Errorf("reading /proc/self/cgroup: %w", err)
	}
	limit, from, err := cgroupMemoryLimit(os.DirFS("/sys/fs/cgroup"), string(procCgroup))
	if err != nil || limit <= 0 {
		return 0, from, err
	}
	soft := int64(float64(limit) * CgroupMemoryLimitFraction)
	debug.SetMemoryLimit(soft)
	return soft, from, nil
}

// SetGCPercentIfUnset sets the garbage collector's target percentage (debug.SetGCPercent, what the
// GOGC environment variable sets) to percent when GOGC is not set; an explicit GOGC ("off"
// included) wins. It reports whether it set it, for the start-up log. Between collections the
// runtime lets the heap grow by percent of the heap the last one found live: a process whose live
// heap is large and long-lived (an informer cache of every pod) peaks at about 1+percent/100 times
// that heap, and a lower percent trades collections (CPU) for a lower peak.
func SetGCPercentIfUnset(percent int) bool {
	if _, ok := os.LookupEnv("GOGC"); ok {
		return false
	}
	debug.SetGCPercent(percent)
	return true
}

// unlimited is the value above which a cgroup v1 limit means none (the kernel reports the largest
// page-aligned int64).
const unlimited = 1 << 62

// cgroupMemoryLimit returns the memory limit in bytes of the cgroup procCgroup (the content of
// /proc/self/cgroup) names, read from root (the cgroup filesystem's mount, /sys/fs/cgroup): the
// smallest limit from the process's own cgroup up to the root of the hierarchy that is visible, 0
// when none is set; and the file it came from.
func cgroupMemoryLimit(root fs.FS, procCgroup string) (int64, string, error) {
	var v2, v1 string
	v2Found, v1Found := false, false
	sc := bufio.NewScanner(strings.NewReader(procCgroup))
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2, v2Found = parts[2], true
		case strings.Contains(","+parts[1]+",", ",memory,"):
			v1, v1Found = parts[2], true
		}
	}
	switch {
	case v2Found:
		if _, err := fs.Stat(root, "cgroup.controllers"); err == nil {
			return smallestLimit(root, "", v2, "memory.max")
		}
		// A hybrid host: the v2 hierarchy is mounted under unified/, without the memory controller.
		if v1Found {
			return smallestLimit(root, "memory", v1, "memory.limit_in_bytes")
		}
		return 0, "", nil
	case v1Found:
		return smallestLimit(root, "memory", v1, "memory.limit_in_bytes")
	}
	return 0, "", nil
}

// smallestLimit reads file in dir (under mount in root) and in each of its parents, and returns the
// smallest limit set. A cgroup namespace shows the process's cgroup as "/", the mount's root: the
// directories of the path that do not exist (the path outside the namespace) are skipped.
func smallestLimit(root fs.FS, mount, dir, file string) (int64, string, error) {
	var best int64
	var from string
	for p := path.Clean("/" + dir); ; p = path.Dir(p) {
		name := path.Join(mount, strings.TrimPrefix(p, "/"), file)
		raw, err := fs.ReadFile(root, name)
		switch {
		case err == nil:
			v := strings.TrimSpace(string(raw))
			if v != "max" {
				n, perr := strconv.ParseInt(v, 10, 64)
				if perr != nil {
					return 0, "", fmt.Errorf("cgroup %s: %q is not a number of bytes", name, v)
				}
				if n > 0 && n < unlimited && (best == 0 || n < best) {
					best, from = n, "/sys/fs/cgroup/"+name
				}
			}
		case !errors.Is(err, fs.ErrNotExist):
			return 0, "", fmt.Errorf("cgroup %s: %w", name, err)
		}
		if p == "/" {
			return best, from, nil
		}
	}
}
