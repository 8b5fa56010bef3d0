package consolerbac

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/accord-sched/accord/manifests/render"
	"github.com/accord-sched/accord/test/harness"
)

// runBinary runs the real accord-console with the args of the shipped Deployment (paths and address
// made local), as cfg's impersonated ServiceAccount: it becomes ready, serves the cluster's state and
// explain, and has no write endpoint.
func runBinary(t *testing.T, cfg *rest.Config, objs []*unstructured.Unstructured, policyFile, schedFile string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := harness.BuildBinary(t, "github.com/accord-sched/accord/cmd/console")
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range kc.AuthInfos {
		ai.Impersonate, ai.ImpersonateGroups = cfg.Impersonate.UserName, cfg.Impersonate.Groups
	}
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(harness.FreePort(t)))

	dep := render.Find(objs, "Deployment", "accord-console")
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	args := []string{"--kubeconfig=" + kubeconfig}
	for _, a := range containers[0].(map[string]any)["args"].([]any) {
		arg := a.(string)
		switch {
		case strings.HasPrefix(arg, "--bind-address="):
			arg = "--bind-address=" + addr
		case strings.HasPrefix(arg, "--policy-config-file="):
			arg = "--policy-config-file=" + policyFile
		case strings.HasPrefix(arg, "--scheduler-config-file="):
			arg = "--scheduler-config-file=" + schedFile
		}
		args = append(args, arg)
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("accord-console did not exit cleanly on SIGTERM: %v\n%s", err, out.String())
			}
		case <-time.After(30 * time.Second):
			t.Errorf("accord-console still running 30 s after SIGTERM\n%s", out.String())
			_ = cmd.Process.Kill()
			<-exited
		}
	}()

	url := "http://" + addr
	start := time.Now()
	if err := harness.WaitFor(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		code, _ := get(ctx, url+"/readyz")
		return code == http.StatusOK, nil
	}); err != nil {
		t.Fatalf("accord-console %v never became ready: %v\n%s", args, err, out.String())
	}
	t.Logf("accord-console (the binary, shipped args) ready after %v", time.Since(start).Round(time.Millisecond))
	// The shipped args require a token (--authentication=token): without one the data is refused;
	// the cluster admin's token, reviewed by the apiserver, is let in.
	if code, _ := get(ctx, url+"/api/state"); code != http.StatusUnauthorized {
		t.Errorf("/api/state without a token: %d, want 401", code)
	}
	asAdmin := func(method, path, body string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, method, url+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+env.Config.BearerToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	if code, body := asAdmin(http.MethodGet, "/api/state", ""); code != http.StatusOK || !strings.Contains(body, `"nodes":[{`) {
		t.Errorf("/api/state: %d %.300s", code, body)
	}
	if code, body := asAdmin(http.MethodGet, "/api/explain", ""); code != http.StatusOK {
		t.Errorf("/api/explain: %d %s", code, body)
	}
	code, body := asAdmin(http.MethodPost, "/api/playground/resource", `{"node":"n","resource":"cpu"}`)
	if code != http.StatusNotFound && code != http.StatusMethodNotAllowed {
		t.Errorf("POST /api/playground/resource without --playground: %d %s, want 404 or 405", code, body)
	}
}
