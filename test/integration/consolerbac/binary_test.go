package consolerbac

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
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

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/accord-sched/accord/manifests/render"
	"github.com/accord-sched/accord/pkg/console"
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

	// The shipped args serve HTTPS with a self-signed certificate for localhost (no TLS Secret).
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("no certificate")
			}
			return cs.PeerCertificates[0].VerifyHostname("localhost")
		}}}}
	defer client.CloseIdleConnections()
	call := func(method, path, token, body string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, method, "https://"+addr+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	start := time.Now()
	if err := harness.WaitFor(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		code, _ := call(http.MethodGet, "/readyz", "", "")
		return code == http.StatusOK, nil
	}); err != nil {
		t.Fatalf("accord-console %v never became ready over HTTPS: %v\n%s", args, err, out.String())
	}
	t.Logf("accord-console (the binary, shipped args) ready over HTTPS after %v", time.Since(start).Round(time.Millisecond))
	// The shipped args require a token for the console's audience (--authentication=token,
	// --token-audience): without one, and with the cluster admin's token (the apiserver's audience),
	// the data is refused; a cluster-admin ServiceAccount's token minted for the audience is let in.
	if code, _ := call(http.MethodGet, "/api/state", "", ""); code != http.StatusUnauthorized {
		t.Errorf("/api/state without a token: %d, want 401", code)
	}
	if code, body := call(http.MethodGet, "/api/state", env.Config.BearerToken, ""); code != http.StatusUnauthorized {
		t.Errorf("/api/state with the admin's token for the apiserver's audience: %d %.200s, want 401", code, body)
	}
	admin := adminToken(ctx, t, console.DefaultTokenAudience)
	if code, body := call(http.MethodGet, "/api/state", admin, ""); code != http.StatusOK || !strings.Contains(body, `"nodes":[{`) {
		t.Errorf("/api/state: %d %.300s", code, body)
	}
	if code, body := call(http.MethodGet, "/api/explain", admin, ""); code != http.StatusOK {
		t.Errorf("/api/explain: %d %s", code, body)
	}
	code, body := call(http.MethodPost, "/api/playground/resource", admin, `{"node":"n","resource":"cpu"}`)
	if code != http.StatusNotFound && code != http.StatusMethodNotAllowed {
		t.Errorf("POST /api/playground/resource without --playground: %d %s, want 404 or 405", code, body)
	}
}

// adminToken returns a token, minted for audience, of a ServiceAccount bound to cluster-admin
// (created for the test, and deleted after it).
func adminToken(ctx context.Context, t *testing.T, audience string) string {
	t.Helper()
	const ns, name = "default", "console-test-admin"
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	create(ctx, t, env.Client.CoreV1().ServiceAccounts(ns).Create, sa, func() error {
		return env.Client.CoreV1().ServiceAccounts(ns).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}}
	create(ctx, t, env.Client.RbacV1().ClusterRoleBindings().Create, binding, func() error {
		return env.Client.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	tr, err := env.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{audience}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token of %s/%s for %s: %v", ns, name, audience, err)
	}
	return tr.Status.Token
}
