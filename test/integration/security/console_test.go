package security

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/accord-sched/accord/manifests/render"
	"github.com/accord-sched/accord/pkg/console"
	"github.com/accord-sched/accord/test/harness"
)

// TestConsoleActsAsItsUser runs accord-console with token authentication over HTTPS (its self-signed
// certificate), reading as its own ServiceAccount under the chart's RBAC (its read-only ClusterRole
// and system:auth-delegator), and calls it as: nobody, a token the apiserver refuses, the viewer's
// token for the apiserver's audience (not the console's), a ServiceAccount allowed only namespace
// team-a's pods, one bound to the chart's console-viewer ClusterRole (console.viewers) and one also
// bound to console-explain (console.explainers), each token minted for the console's audience.
// team-a's user reads team-a's pods only, from /api/state and from the stream. It asserts every
// status code, the login's session cookie (__Host-, Secure, HttpOnly, SameSite=Strict, an opaque id;
// logout ends it), the audience refusal, the failed-login limit of one client address, that a
// stream is closed once its user lost the right, the Content-Security-Policy, the explain rate
// limit and that the playground's controls do not exist, and logs the codes as a table.
func TestConsoleActsAsItsUser(t *testing.T) {
	ns := env.CreateNamespace(t, "console-auth")
	teamA := env.CreateNamespace(t, "team-a")
	subject := func(name string) []any {
		return []any{map[string]any{"kind": "ServiceAccount", "name": name, "namespace": ns}}
	}
	objs, err := render.Chart(chartDir, render.Release{Name: ns, Namespace: ns, Values: map[string]any{
		"console": map[string]any{"enabled": true, "viewers": append(subject("viewer"), subject("explainer")...), "explainers": append(subject("explainer"), subject("team-a-explainer")...)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	name := ns + "-accord-console"
	apply(t, keep(objs, func(kind, n string) bool {
		return n == name || n == name+"-auth-delegator" || n == name+"-viewer" || n == name+"-explain"
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// team-a's user may list pods in team-a only, as a namespace's owner would be.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader", Namespace: teamA}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods", "events"}, Verbs: []string{"get", "list", "watch"}}}}
	if _, err := env.Client.RbacV1().Roles(teamA).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client.RbacV1().RoleBindings(teamA).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader", Namespace: teamA},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "team-a", Namespace: ns}, {Kind: rbacv1.ServiceAccountKind, Name: "team-a-explainer", Namespace: ns}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The console, as its ServiceAccount.
	cfg, err := clientcmd.BuildConfigFromFlags("", tokenKubeconfig(t, serviceAccountToken(t, ns, name)))
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const explainInterval = time.Hour
	// The table's refused tokens (from 127.0.0.1) stay below it; the limit is tried from 127.0.0.2.
	const failedLogins = 20
	logger, _ := ktesting.NewTestContext(t)
	cctx, stop := context.WithCancel(klog.NewContext(ctx, logger))
	srv, err := console.New(cctx, console.Options{RestConfig: cfg, BindAddress: "127.0.0.1:0", PolicyConfigFile: writeTaintPolicy(t, ns), CacheSyncTimeout: time.Minute,
		Access: console.NewAccess(kube, console.AccessOptions{Explain: console.DefaultExplainAttributes(), ExplainInterval: explainInterval,
			FailedLogins: failedLogins, FailedLoginInterval: time.Hour})})
	if err != nil {
		stop()
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := srv.Serve(cctx); err != nil {
			t.Errorf("console: %v", err)
		}
	})
	defer func() { stop(); wg.Wait() }()

	if !strings.HasPrefix(srv.URL(), "https://") {
		t.Fatalf("console URL %s: want HTTPS", srv.URL())
	}
	// A client from source address local, trusting the console's self-signed certificate for
	// localhost (checked by name, without a CA to chain to).
	newClient := func(local string) *http.Client {
		tlsCfg := &tls.Config{InsecureSkipVerify: true, VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return fmt.Errorf("no certificate")
			}
			return cs.PeerCertificates[0].VerifyHostname("localhost")
		}}
		dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
		return &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: tlsCfg, DialContext: dialer.DialContext},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	client := newClient("127.0.0.1")
	defer client.CloseIdleConnections()
	type answer struct {
		code   int
		header http.Header
		body   string
	}
	do := func(method, path, token string, body io.Reader, header map[string]string) answer {
		req, err := http.NewRequestWithContext(ctx, method, srv.URL()+path, body)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		if path == "/api/stream" && resp.StatusCode == http.StatusOK {
			// A stream does not end: its status is the answer.
			return answer{resp.StatusCode, resp.Header, ""}
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return answer{resp.StatusCode, resp.Header, string(b)}
	}
	t.Log("Waiting up to 60s for the console's /readyz")
	if err := harness.WaitFor(ctx, time.Minute, func(context.Context) (bool, error) {
		return do(http.MethodGet, "/readyz", "", nil, nil).code == http.StatusOK, nil
	}); err != nil {
		t.Fatalf("console never ready: %v", err)
	}
	// A pod in team-a and one elsewhere, for the views; and in each, a pod of a ReplicaSet on a node
	// tainted NoSchedule, which explain's policy nominates.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-node", Labels: map[string]string{"test.accord.dev/ns": ns}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "test.accord.dev/off", Effect: corev1.TaintEffectNoSchedule}}}}
	created, err := env.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// No kubelet here: the node is Ready because the test says so (the descheduler looks at Ready
	// nodes only).
	created.Status = corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}}
	created.Status.Capacity = created.Status.Allocatable
	if _, err := env.Client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{})
	})
	for _, n := range []string{teamA, ns} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: n}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}}}
		if _, err := env.Client.CoreV1().Pods(n).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		bound := pod.DeepCopy()
		bound.Name, bound.Spec.NodeName = "tainted", node.Name
		bound.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "0b1c5e2a-0000-4000-8000-000000000001", Controller: ptr.To(true)}}
		running, err := env.Client.CoreV1().Pods(n).Create(ctx, bound, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		running.Status.Phase = corev1.PodRunning
		if _, err := env.Client.CoreV1().Pods(n).UpdateStatus(ctx, running, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	viewerToken := serviceAccountToken(t, ns, "viewer", console.DefaultTokenAudience)
	t.Log("Waiting up to 60s for the console to show both pods")
	if err := harness.WaitFor(ctx, time.Minute, func(context.Context) (bool, error) {
		a := do(http.MethodGet, "/api/state", viewerToken, nil, nil)
		return a.code == http.StatusOK && strings.Contains(a.body, `"`+teamA+`"`) && strings.Contains(a.body, `"`+ns+`"`), nil
	}); err != nil {
		t.Fatalf("the console never showed both pods: %v", err)
	}
	callers := []struct{ name, token string }{
		{"none", ""},
		{"bad token", "not-a-token"},
		{"console-viewer SA, apiserver audience", serviceAccountToken(t, ns, "viewer")},
		{"SA without rights", serviceAccountToken(t, ns, "nobody", console.DefaultTokenAudience)},
		{"SA with team-a pods only", serviceAccountToken(t, ns, "team-a", console.DefaultTokenAudience)},
		{"SA bound to console-viewer", viewerToken},
		{"SA bound to console-viewer and console-explain", serviceAccountToken(t, ns, "explainer", console.DefaultTokenAudience)},
		{"SA with team-a pods and console-explain", serviceAccountToken(t, ns, "team-a-explainer", console.DefaultTokenAudience)},
	}
	endpoints := []struct {
		method, path string
		want         []int
	}{
		{http.MethodGet, "/healthz", []int{200, 200, 200, 200, 200, 200, 200, 200}},
		{http.MethodGet, "/login", []int{200, 200, 200, 200, 200, 200, 200, 200}},
		{http.MethodGet, "/", []int{303, 303, 303, 403, 200, 200, 200, 200}},
		{http.MethodGet, "/api/state", []int{401, 401, 401, 403, 200, 200, 200, 200}},
		{http.MethodGet, "/api/explain", []int{401, 401, 401, 403, 403, 403, 200, 200}},
		// The second explain of the same user within --explain-interval.
		{http.MethodGet, "/api/explain", []int{401, 401, 401, 403, 403, 403, 429, 429}},
		// Not served without playground mode.
		{http.MethodPost, "/api/playground/load", []int{401, 401, 401, 403, 405, 405, 405, 405}},
		{http.MethodGet, "/api/stream", []int{401, 401, 401, 403, 200, 200, 200, 200}},
		// The login form with the caller's token: a token for the audience opens a session (whatever
		// its rights; the page then answers as above), any other is refused.
		{http.MethodPost, "/login", []int{400, 401, 401, 303, 303, 303, 303, 303}},
	}
	// The explain rows each caller got (200 answers).
	explained := map[string]string{}
	var table strings.Builder
	table.WriteString("\n| accord-console |")
	for _, c := range callers {
		fmt.Fprintf(&table, " %s |", c.name)
	}
	table.WriteString("\n|---|" + strings.Repeat("---|", len(callers)) + "\n")
	for _, e := range endpoints {
		fmt.Fprintf(&table, "| %s %s |", e.method, e.path)
		for i, c := range callers {
			var a answer
			switch {
			case e.path == "/login" && e.method == http.MethodPost:
				a = do(e.method, e.path, "", strings.NewReader(url.Values{"token": {c.token}}.Encode()), map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
				if got := len((&http.Response{Header: a.header}).Cookies()); (a.code == http.StatusSeeOther) != (got == 1) {
					t.Errorf("POST /login as %s = %d with %d cookies", c.name, a.code, got)
				}
			case e.method == http.MethodPost:
				a = do(e.method, e.path, c.token, strings.NewReader(`{"node":"n","cpu":1,"memory":1}`), map[string]string{"Content-Type": "application/json"})
			default:
				a = do(e.method, e.path, c.token, nil, map[string]string{"Content-Type": "application/json"})
			}
			if a.code != e.want[i] {
				t.Errorf("%s %s as %s = %d, want %d: %.300s", e.method, e.path, c.name, a.code, e.want[i], a.body)
			}
			if e.path == "/" && a.code == http.StatusSeeOther && a.header.Get("Location") != "/login" {
				t.Errorf("/ as %s redirects to %q, want /login", c.name, a.header.Get("Location"))
			}
			if e.path == "/" && a.code == http.StatusOK && !strings.Contains(a.header.Get("Content-Security-Policy"), "script-src 'self'") {
				t.Errorf("/ as %s: Content-Security-Policy %q", c.name, a.header.Get("Content-Security-Policy"))
			}
			if e.path == "/api/explain" && a.code == http.StatusOK {
				explained[c.name] = a.body
			}
			if e.path == "/api/explain" && a.code == http.StatusTooManyRequests && a.header.Get("Retry-After") == "" {
				t.Errorf("explain's 429 has no Retry-After")
			}
			fmt.Fprintf(&table, " %d |", a.code)
		}
		table.WriteString("\n")
	}
	t.Log(table.String())

	// Explain is scoped like the page: the cluster-wide explainer gets both namespaces' rows with the
	// nodes' details; team-a's explainer team-a's row only, without them.
	type explainRow struct {
		Namespace, Pod, Node, Reason string
	}
	rows := func(caller string) []explainRow {
		var out []explainRow
		if err := json.Unmarshal([]byte(explained[caller]), &out); err != nil {
			t.Fatalf("explain rows of %s: %v: %.300s", caller, err, explained[caller])
		}
		return out
	}
	all, mine := rows(callers[6].name), rows(callers[7].name)
	var allNS []string
	for _, r := range all {
		allNS = append(allNS, r.Namespace)
		if r.Reason == "" {
			t.Errorf("the cluster-wide explainer's row without its reason: %+v", r)
		}
	}
	slices.Sort(allNS)
	if want := []string{ns, teamA}; !slices.Equal(allNS, slices.Sorted(slices.Values(want))) {
		t.Errorf("the cluster-wide explainer's rows are of %v, want %v: %s", allNS, want, explained[callers[6].name])
	}
	if len(mine) != 1 || mine[0].Namespace != teamA || mine[0].Pod != "tainted" || mine[0].Node != node.Name || mine[0].Reason != "" {
		t.Errorf("team-a's explainer got %+v, want team-a's pod alone, its node named and no node details", mine)
	}
	t.Logf("explain rows: cluster-wide explainer %d (%v), team-a's explainer %d (%+v)", len(all), allNS, len(mine), mine)

	// The viewer's state holds both namespaces' pods; team-a's user's state and stream only team-a's.
	type pending struct {
		Pending []struct{ Namespace, Name string } `json:"pending"`
	}
	namespaces := func(body string) []string {
		var v pending
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatalf("decoding the view: %v: %.200s", err, body)
		}
		var out []string
		for _, p := range v.Pending {
			out = append(out, p.Namespace)
		}
		slices.Sort(out)
		return out
	}
	if a := do(http.MethodGet, "/api/state", callers[5].token, nil, nil); a.code != http.StatusOK || !slices.Contains(namespaces(a.body), ns) || !slices.Contains(namespaces(a.body), teamA) {
		t.Errorf("/api/state as the viewer: %d %.300s, want the pods of %s and %s", a.code, a.body, ns, teamA)
	}
	if a := do(http.MethodGet, "/api/state", callers[4].token, nil, nil); a.code != http.StatusOK || !slices.Equal(namespaces(a.body), []string{teamA}) {
		t.Errorf("/api/state as team-a's user: %d %.300s, want team-a's pod only", a.code, a.body)
	}
	streamCtx, streamCancel := context.WithTimeout(ctx, 10*time.Second)
	req, _ := http.NewRequestWithContext(streamCtx, http.MethodGet, srv.URL()+"/api/stream", nil)
	req.Header.Set("Authorization", "Bearer "+callers[4].token)
	if resp, err := client.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("/api/stream as team-a's user: %v %v, want 200", resp, err)
	} else {
		r := bufio.NewReader(resp.Body)
		line, err := r.ReadString('\n')
		for err == nil && !strings.HasPrefix(line, "data: ") {
			line, err = r.ReadString('\n')
		}
		resp.Body.Close()
		if data, ok := strings.CutPrefix(line, "data: "); err != nil || !ok || !slices.Equal(namespaces(data), []string{teamA}) {
			t.Errorf("/api/stream as team-a's user: %q %v, want team-a's pod only", line, err)
		}
	}
	streamCancel()

	// The login page: the form's token (for the console's audience) opens a server-side session; the
	// cookie is __Host-, Secure, HttpOnly, SameSite=Strict, Path=/ and holds an opaque id, which then
	// authenticates until logout ends the session. A token for the apiserver's audience opens none;
	// a cross-site post of the form is refused.
	form := url.Values{"token": {callers[5].token}}.Encode()
	formHeader := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	a := do(http.MethodPost, "/login", "", strings.NewReader(form), formHeader)
	var cookie *http.Cookie
	for _, c := range (&http.Response{Header: a.header}).Cookies() {
		if c.Name == console.SessionCookie {
			cookie = c
		}
	}
	if a.code != http.StatusSeeOther || cookie == nil || !strings.HasPrefix(cookie.Name, "__Host-") || !cookie.Secure || !cookie.HttpOnly ||
		cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/" || cookie.Domain != "" || cookie.MaxAge <= 0 {
		t.Fatalf("POST /login = %d, cookie %+v: want 303 and a __Host- cookie, Secure, HttpOnly, SameSite=Strict, Path=/, expiring", a.code, cookie)
	}
	if strings.Contains(cookie.Value, callers[5].token) || strings.Contains(callers[5].token, cookie.Value) {
		t.Errorf("the session cookie holds the token")
	}
	session := map[string]string{"Cookie": (&http.Cookie{Name: cookie.Name, Value: cookie.Value}).String()}
	if a := do(http.MethodGet, "/api/state", "", nil, session); a.code != http.StatusOK {
		t.Errorf("/api/state with the session cookie = %d", a.code)
	}
	t.Logf("session cookie: %s=<%d characters>; Secure=%t HttpOnly=%t SameSite=Strict Path=%s Max-Age=%d", cookie.Name, len(cookie.Value), cookie.Secure, cookie.HttpOnly, cookie.Path, cookie.MaxAge)
	logout := map[string]string{"Cookie": session["Cookie"], "Content-Type": "application/x-www-form-urlencoded"}
	if a := do(http.MethodPost, "/logout", "", strings.NewReader(""), logout); a.code != http.StatusSeeOther {
		t.Errorf("POST /logout = %d, want 303", a.code)
	}
	if a := do(http.MethodGet, "/api/state", "", nil, session); a.code != http.StatusUnauthorized {
		t.Errorf("/api/state with the cookie of a session logout ended = %d, want 401", a.code)
	}
	a = do(http.MethodPost, "/login", "", strings.NewReader(url.Values{"token": {callers[2].token}}.Encode()), formHeader)
	if a.code != http.StatusUnauthorized || len((&http.Response{Header: a.header}).Cookies()) != 0 {
		t.Errorf("POST /login with the viewer's token for the apiserver's audience = %d %v, want 401 and no cookie", a.code, a.header["Set-Cookie"])
	}
	if login := do(http.MethodGet, "/login", "", nil, nil); !strings.Contains(login.body, "kubectl create token NAME --audience "+console.DefaultTokenAudience) {
		t.Errorf("the login page does not say how to mint a token for the audience: %.500s", login.body)
	}
	if a := do(http.MethodPost, "/login", "", strings.NewReader(url.Values{"token": {"not-a-token"}}.Encode()), formHeader); a.code != http.StatusUnauthorized {
		t.Errorf("POST /login with a refused token = %d, want 401", a.code)
	}
	crossSite := map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": "https://evil.example"}
	if a := do(http.MethodPost, "/login", "", strings.NewReader(form), crossSite); a.code != http.StatusForbidden {
		t.Errorf("cross-site POST /login = %d, want 403", a.code)
	}

	// The failed-login limit: from 127.0.0.2, failedLogins refused tokens are reviewed (401), the
	// next answer is 429 with Retry-After, even for a valid token; 127.0.0.1 still logs in.
	other := newClient("127.0.0.2")
	defer other.CloseIdleConnections()
	post := func(c *http.Client, token string) (int, http.Header) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL()+"/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("POST /login: %v", err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	for i := range failedLogins {
		if code, _ := post(other, fmt.Sprintf("guess-%d", i)); code != http.StatusUnauthorized {
			t.Fatalf("refused login %d from 127.0.0.2 = %d, want 401", i, code)
		}
	}
	if code, h := post(other, callers[5].token); code != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
		t.Errorf("login from 127.0.0.2 after %d refused tokens = %d (Retry-After %q), want 429 with Retry-After", failedLogins, code, h.Get("Retry-After"))
	}
	if code, _ := post(client, callers[5].token); code != http.StatusSeeOther {
		t.Errorf("login from 127.0.0.1 meanwhile = %d, want 303", code)
	}
	t.Logf("failed logins: %d refused tokens from 127.0.0.2 answered 401, the next 429; 127.0.0.1 unaffected", failedLogins)

	// An open stream is checked again at the answer cache's period: team-a's user loses the right to
	// list team-a's pods and the stream closes.
	streamCtx, streamCancel = context.WithTimeout(ctx, 45*time.Second)
	defer streamCancel()
	req, _ = http.NewRequestWithContext(streamCtx, http.MethodGet, srv.URL()+"/api/stream", nil)
	req.Header.Set("Authorization", "Bearer "+callers[4].token)
	resp, err := client.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/api/stream as team-a's user: %v %v, want 200", resp, err)
	}
	defer resp.Body.Close()
	if err := env.Client.RbacV1().RoleBindings(teamA).Delete(ctx, "pod-reader", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	revoked := time.Now()
	t.Log("Waiting up to 45s for team-a's stream to close after its RoleBinding was deleted")
	if _, err := io.Copy(io.Discard, resp.Body); err != nil && streamCtx.Err() != nil {
		t.Errorf("team-a's stream still open %v after its user lost the right to list team-a's pods", time.Since(revoked).Round(time.Second))
	} else {
		t.Logf("team-a's stream closed %v after its RoleBinding was deleted", time.Since(revoked).Round(time.Second))
	}
}
