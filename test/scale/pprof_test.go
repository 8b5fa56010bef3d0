package scale

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// pprofDir is where the scheduler runs' profiles go when ACCORD_SCALE_PPROF_DIR is set (profiles
// are for looking at, never committed); empty: no profiling.
func pprofDir() string { return os.Getenv("ACCORD_SCALE_PPROF_DIR") }

// pprofArgs are the kube-scheduler flags that serve its pprof endpoints on port without
// authentication (loopback only).
func pprofArgs(port int) []string {
	return []string{"--secure-port=" + strconv.Itoa(port), "--bind-address=127.0.0.1", "--profiling=true",
		"--authorization-always-allow-paths=/healthz,/readyz,/livez,/debug/pprof/*"}
}

// fetchProfile saves https://127.0.0.1:port/debug/pprof/<path> to dir/<name>.
func fetchProfile(ctx context.Context, port int, path, dir, name string) error {
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the process's self-signed loopback certificate
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/debug/pprof/%s", port, path), nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET /debug/pprof/%s: %s: %s", path, resp.Status, b)
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	return err
}

// profileSeconds is how long the CPU profile of a scheduler run lasts (ACCORD_SCALE_PPROF_SECONDS,
// default 10), from its first bind.
func profileSeconds(t *testing.T) time.Duration {
	return time.Duration(envInt(t, "ACCORD_SCALE_PPROF_SECONDS", 10)) * time.Second
}
