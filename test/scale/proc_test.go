package scale

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat: 100 on every Linux
// architecture Go supports.
const clockTicks = 100

// procCPU returns the CPU time (user + system) the process pid has used so far.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces: count fields after it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command field", pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err := strconv.ParseInt(f[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat utime: %w", pid, err)
	}
	stime, err := strconv.ParseInt(f[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat stime: %w", pid, err)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// procExited reports whether the child pid has exited (a zombie, not waited for yet).
func procExited(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z")
}

// procPeakRSS returns the process's peak resident set size (VmHWM) in bytes.
func procPeakRSS(pid int) (int64, error) { return procStatusBytes(pid, "VmHWM") }

// procRSS returns the process's resident set size now (VmRSS) in bytes.
func procRSS(pid int) (int64, error) { return procStatusBytes(pid, "VmRSS") }

// procStatusBytes returns a kB field of /proc/<pid>/status (VmHWM, VmRSS) in bytes.
func procStatusBytes(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/%d/status %s: %w", pid, field, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no %s", pid, field)
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
