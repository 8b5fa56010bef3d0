// Package install_test installs Accord the way an operator does — the Helm chart rendered with Helm's
// Go packages, and the kustomize base rendered with kustomize's Go API — into a real apiserver with
// RBAC authorization, then runs accord-scheduler, accord-descheduler and accord-metrics-reporter
// in-process as the ServiceAccounts the manifests ship (impersonation): they schedule, simulate,
// evict, write Events and NodeMetrics without a single Forbidden, and each ServiceAccount is refused
// what it must not do.
package install_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/manifests/render"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
	"github.com/accord-sched/accord/pkg/metricsreporter"
	reporterapp "github.com/accord-sched/accord/pkg/metricsreporter/app"
	"github.com/accord-sched/accord/pkg/scheduler/server"
	"github.com/accord-sched/accord/test/harness"
	"github.com/accord-sched/accord/test/metricsapi"
)

var env *harness.Env

// The apiserver authorizes with RBAC (the harness default is AlwaysAllow): the shipped roles are
// what the two ServiceAccounts get.
func TestMain(m *testing.M) {
	harness.Main(m, &env, harness.Options{APIServerFlags: []string{"--authorization-mode=RBAC"}})
}

const (
	chartDir = "../../../manifests/charts/accord"
	baseDir  = "../../../manifests"
)

// install describes one rendered installation.
type install struct {
	objs            []*unstructured.Unstructured
	namespace       string
	createNamespace bool
	// The ServiceAccounts, ConfigMaps and leader-election Leases of the three components.
	schedulerSA, deschedulerSA, reporterSA          string
	schedulerConfigCM, policyCM, reporterConfigCM   string
	schedulerLease, deschedulerLease, reporterLease string
	// policyEdit, when set, changes the rendered policy before the descheduler runs it.
	policyEdit func(string) string
}

func TestHelmChartRBAC(t *testing.T) {
	ns := "accord-rbac-helm"
	objs, err := render.Chart(chartDir, render.Release{Name: "rbac", Namespace: ns, Values: map[string]any{
		// Young pods may be evicted, so the test needs no waiting.
		"descheduler": map[string]any{"defaultEvictor": map[string]any{"minPodAge": "0s"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	runInstall(t, install{
		objs: objs, namespace: ns, createNamespace: true,
		schedulerSA: "rbac-accord-scheduler", deschedulerSA: "rbac-accord-descheduler", reporterSA: "rbac-accord-metrics-reporter",
		schedulerConfigCM: "rbac-accord-scheduler-config", policyCM: "rbac-accord-descheduler-policy", reporterConfigCM: "rbac-accord-metrics-reporter-config",
		schedulerLease: "rbac-accord-scheduler", deschedulerLease: "rbac-accord-descheduler", reporterLease: "rbac-accord-metrics-reporter",
	})
}

func TestKustomizeRBAC(t *testing.T) {
	objs, err := render.Kustomize(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	runInstall(t, install{
		objs: objs, namespace: "kube-system",
		schedulerSA: "accord-scheduler", deschedulerSA: "accord-descheduler", reporterSA: "accord-metrics-reporter",
		schedulerConfigCM: "accord-scheduler-config", policyCM: "accord-descheduler-policy", reporterConfigCM: "accord-metrics-reporter-config",
		schedulerLease: "accord-scheduler", deschedulerLease: "accord-descheduler", reporterLease: "accord-metrics-reporter",
		policyEdit: func(p string) string {
			if !strings.Contains(p, "minPodAge: 5m") {
				t.Fatalf("the base policy no longer sets minPodAge: 5m:\n%s", p)
			}
			return strings.Replace(p, "minPodAge: 5m", "minPodAge: 0s", 1)
		},
	})
}

// runInstall applies the objects, runs the three components as their ServiceAccounts through a proxy
// that records every Forbidden, and checks what each ServiceAccount must not do.
func runInstall(t *testing.T, in install) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if in.createNamespace {
		_, err := env.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: in.namespace}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	apply(ctx, t, in.objs)

	dir := t.TempDir()
	schedConfig, err := render.ConfigMapData(in.objs, in.schedulerConfigCM, "scheduler-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	policy, err := render.ConfigMapData(in.objs, in.policyCM, "policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if in.policyEdit != nil {
		policy = in.policyEdit(policy)
	}
	schedFile := writeFile(t, dir, "scheduler-config.yaml", schedConfig)
	// In-process, the scheduler runs without leader election (kube-scheduler exits the process when
	// it loses the lease); the Lease RBAC is exercised with real requests below.
	inProcessSched := writeFile(t, dir, "scheduler-inprocess.yaml", withoutLeaderElection(t, schedConfig))
	policyFile := writeFile(t, dir, "policy.yaml", policy)
	reporterData, err := render.ConfigMapData(in.objs, in.reporterConfigCM, "config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reporterConfig, err := metricsreporter.DecodeConfig([]byte(reporterData))
	if err != nil {
		t.Fatalf("accord-metrics-reporter configuration: %v", err)
	}

	proxy := newForbiddenProxy(t)
	schedUser := "system:serviceaccount:" + in.namespace + ":" + in.schedulerSA
	deschedUser := "system:serviceaccount:" + in.namespace + ":" + in.deschedulerSA
	reporterUser := "system:serviceaccount:" + in.namespace + ":" + in.reporterSA
	schedKubeconfig := proxy.kubeconfig(t, dir, "scheduler", schedUser)

	// The workload: two nodes, A offering cpu and memory, B not cpu; every replica lands on A.
	work := env.CreateNamespace(t, "install-work")
	nodeA, nodeB := work+"-a", work+"-b"
	for _, n := range []string{nodeA, nodeB} {
		if _, err := env.Nodes.CreateNode(ctx, harness.NodeSpec{Name: n}); err != nil {
			t.Fatal(err)
		}
		name := n
		t.Cleanup(func() {
			_ = env.Accord.SchedulingV1alpha1().ClusterScopedResources().Delete(context.Background(), name, metav1.DeleteOptions{})
			_ = env.Accord.SloV1alpha1().NodeMetrics().Delete(context.Background(), name, metav1.DeleteOptions{})
			_ = env.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	if err := env.Nodes.WaitForNodesReady(ctx, nodeA, nodeB); err != nil {
		t.Fatal(err)
	}
	setCR(ctx, t, nodeA, true)
	setCR(ctx, t, nodeB, false)

	// metrics.k8s.io for accord-metrics-reporter, served through the apiserver's aggregator; low
	// usage, so that LoadAware and LowNodeLoad leave both nodes alone.
	ms := metricsapi.StartRegistered(t, env.Config)
	for _, n := range []string{nodeA, nodeB} {
		ms.SetNode(n, "100m", "100Mi")
	}

	var wg sync.WaitGroup
	runCtx, stop := context.WithCancel(ctx)
	defer func() { stop(); wg.Wait() }()
	wg.Add(1)
	go func() {
		defer wg.Done()
		// In-process without leader election, like the others; its Lease RBAC is exercised below.
		if err := reporterapp.Run(runCtx, reporterapp.Config{RestConfig: proxy.restConfig(reporterUser), Config: reporterConfig}); err != nil {
			t.Errorf("accord-metrics-reporter: %v", err)
		}
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := server.RunInProcess(runCtx, schedKubeconfig, inProcessSched); err != nil {
			t.Errorf("accord-scheduler: %v", err)
		}
	}()

	const replicas = 2
	createDeployment(ctx, t, work, replicas)
	waitFor(ctx, t, "every replica bound to node A by accord-scheduler", func() bool {
		return len(podsOn(ctx, t, work, nodeA)) == replicas
	})
	waitFor(ctx, t, "accord-scheduler's Scheduled events", func() bool {
		return countEvents(ctx, t, work, "Scheduled", "accord-scheduler") >= replicas
	})

	// Node A stops offering cpu and B starts: the descheduler must move the replicas.
	setCR(ctx, t, nodeB, true)
	setCR(ctx, t, nodeA, false)
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := runner.Run(runCtx, runner.Config{
			RestConfig:           proxy.restConfig(deschedUser),
			PolicyConfigFile:     policyFile,
			SchedulerConfigFile:  schedFile,
			DeschedulingInterval: time.Second,
		})
		if err != nil {
			t.Errorf("accord-descheduler: %v", err)
		}
	}()
	waitFor(ctx, t, "accord-descheduler's Descheduled events", func() bool {
		return countEvents(ctx, t, work, "Descheduled", "accord-descheduler") >= 1
	})
	waitFor(ctx, t, "every replica rescheduled onto node B", func() bool {
		return len(podsOn(ctx, t, work, nodeB)) == replicas && len(podsOn(ctx, t, work, nodeA)) == 0
	})
	waitFor(ctx, t, "accord-metrics-reporter's NodeMetrics of nodes A and B", func() bool {
		for _, n := range []string{nodeA, nodeB} {
			nm, err := env.Accord.SloV1alpha1().NodeMetrics().Get(ctx, n, metav1.GetOptions{})
			if err != nil || nm.Status.UpdateTime == nil || !nm.Status.NodeUsage.Cpu().Equal(resource.MustParse("100m")) {
				return false
			}
		}
		return true
	})
	stop()
	wg.Wait()

	// Leader election with the shipped Roles: each takes and renews its own Lease.
	takeLease(ctx, t, proxy.restConfig(schedUser), in.namespace, in.schedulerLease)
	takeLease(ctx, t, proxy.restConfig(deschedUser), in.namespace, in.deschedulerLease)
	takeLease(ctx, t, proxy.restConfig(reporterUser), in.namespace, in.reporterLease)

	// Not one request of any component was refused, and all really went through the proxy.
	if f := proxy.forbidden(); len(f) > 0 {
		t.Errorf("%d Forbidden responses:\n%s", len(f), strings.Join(f, "\n"))
	}
	for _, u := range []string{schedUser, deschedUser, reporterUser} {
		if n := proxy.requests(u); n < 10 {
			t.Errorf("%s made only %d requests", u, n)
		}
	}

	// What each ServiceAccount must not do.
	for _, c := range []struct {
		user string
		attr authorizationv1.ResourceAttributes
		want bool
	}{
		{deschedUser, authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Subresource: "eviction", Namespace: work}, true},
		{deschedUser, authorizationv1.ResourceAttributes{Verb: "delete", Resource: "pods", Namespace: work}, false},
		{deschedUser, authorizationv1.ResourceAttributes{Verb: "deletecollection", Resource: "pods", Namespace: work}, false},
		{deschedUser, authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Namespace: work}, false},
		// No profile soft-evicts in these installs: no patch on pods (least privilege follows the
		// configuration).
		{deschedUser, authorizationv1.ResourceAttributes{Verb: "patch", Resource: "pods", Namespace: work}, false},
		{deschedUser, authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Subresource: "binding", Namespace: work}, false},
		{deschedUser, authorizationv1.ResourceAttributes{Verb: "update", Resource: "nodes"}, false},
		{deschedUser, authorizationv1.ResourceAttributes{Verb: "update", Group: "scheduling.accord.dev", Resource: "clusterscopedresources"}, false},
		{deschedUser, authorizationv1.ResourceAttributes{Verb: "patch", Group: "slo.accord.dev", Resource: "nodemetrics"}, false},
		{deschedUser, authorizationv1.ResourceAttributes{Verb: "create", Group: "slo.accord.dev", Resource: "nodemetrics"}, false},
		{deschedUser, authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Namespace: work}, false},
		{deschedUser, authorizationv1.ResourceAttributes{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Name: in.schedulerLease, Namespace: in.namespace}, false},
		{schedUser, authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Subresource: "binding", Namespace: work}, true},
		{schedUser, authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Subresource: "eviction", Namespace: work}, false},
		{schedUser, authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Namespace: work}, false},
		{schedUser, authorizationv1.ResourceAttributes{Verb: "update", Group: "scheduling.accord.dev", Resource: "clusterscopedresources"}, false},
		{schedUser, authorizationv1.ResourceAttributes{Verb: "delete", Group: "slo.accord.dev", Resource: "nodemetrics"}, false},
		{schedUser, authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Namespace: work}, false},
		{schedUser, authorizationv1.ResourceAttributes{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Name: in.deschedulerLease, Namespace: in.namespace}, false},
		{reporterUser, authorizationv1.ResourceAttributes{Verb: "patch", Group: "slo.accord.dev", Resource: "nodemetrics", Subresource: "status"}, true},
		{reporterUser, authorizationv1.ResourceAttributes{Verb: "create", Group: "slo.accord.dev", Resource: "nodemetrics"}, true},
		{reporterUser, authorizationv1.ResourceAttributes{Verb: "list", Group: "metrics.k8s.io", Resource: "pods"}, true},
		{reporterUser, authorizationv1.ResourceAttributes{Verb: "update", Group: "slo.accord.dev", Resource: "nodemetrics"}, false},
		{reporterUser, authorizationv1.ResourceAttributes{Verb: "delete", Group: "slo.accord.dev", Resource: "nodemetrics"}, false},
		{reporterUser, authorizationv1.ResourceAttributes{Verb: "update", Resource: "nodes"}, false},
		{reporterUser, authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Subresource: "eviction", Namespace: work}, false},
		{reporterUser, authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Namespace: work}, false},
		{reporterUser, authorizationv1.ResourceAttributes{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Name: in.schedulerLease, Namespace: in.namespace}, false},
	} {
		if got := allowed(ctx, t, c.user, in.namespace, c.attr); got != c.want {
			t.Errorf("%s may %s %s/%s %s: %v, want %v", c.user, c.attr.Verb, c.attr.Resource, c.attr.Subresource, c.attr.Group, got, c.want)
		}
	}
	// And real requests as each ServiceAccount are refused; the proxy sees exactly these two, which
	// also shows it would have caught a Forbidden of the components.
	pod := podsOn(ctx, t, work, nodeB)[0]
	desched, err := kubernetes.NewForConfig(proxy.restConfig(deschedUser))
	if err != nil {
		t.Fatal(err)
	}
	if err := desched.CoreV1().Pods(work).Delete(ctx, pod.Name, metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("descheduler deleting a pod: %v, want Forbidden", err)
	}
	sched, err := kubernetes.NewForConfig(proxy.restConfig(schedUser))
	if err != nil {
		t.Fatal(err)
	}
	err = sched.CoreV1().Pods(work).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: work}})
	if !apierrors.IsForbidden(err) {
		t.Errorf("scheduler evicting a pod: %v, want Forbidden", err)
	}
	if f := proxy.forbidden(); len(f) != 2 {
		t.Errorf("the proxy recorded %d Forbidden responses, want the 2 refused requests: %v", len(f), f)
	}
	t.Logf("requests: accord-scheduler %d, accord-descheduler %d, accord-metrics-reporter %d, Forbidden before the negative checks: 0",
		proxy.requests(schedUser), proxy.requests(deschedUser), proxy.requests(reporterUser))
}

// apply server-side applies objs as `kubectl apply --server-side` does: CRDs first.
func apply(ctx context.Context, t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(env.Client.Discovery()))
	ordered := slices.Clone(objs)
	slices.SortStableFunc(ordered, func(a, b *unstructured.Unstructured) int {
		rank := func(o *unstructured.Unstructured) int {
			switch o.GetKind() {
			case "CustomResourceDefinition":
				return 0
			case "Namespace":
				return 1
			}
			return 2
		}
		return rank(a) - rank(b)
	})
	for _, o := range ordered {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(schema.GroupKind{Group: gvk.Group, Kind: gvk.Kind}, gvk.Version)
		if err != nil {
			t.Fatalf("%s %s: %v", gvk, o.GetName(), err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if o.GetNamespace() != "" {
			ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		if _, err := ri.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: "accord-install-test", Force: true}); err != nil {
			t.Fatalf("applying %s %s/%s: %v", gvk.Kind, o.GetNamespace(), o.GetName(), err)
		}
	}
}

// forbiddenProxy stands between the components and the apiserver: it forwards every request with
// the admin's credentials and the client's Impersonate-* headers (so the apiserver authorizes the
// impersonated ServiceAccount) and records the responses.
type forbiddenProxy struct {
	srv *httptest.Server
	mu  sync.Mutex
	f   []string
	n   map[string]int
}

func newForbiddenProxy(t *testing.T) *forbiddenProxy {
	t.Helper()
	target, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	p := &forbiddenProxy{n: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = transport
	rp.FlushInterval = -1 // watches stream
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user := r.Header.Get("Impersonate-User")
		p.mu.Lock()
		p.n[user]++ // counted when it starts: a watch ends only when its client stops
		p.mu.Unlock()
		// A Forbidden is recorded before its status reaches the client.
		rp.ServeHTTP(&statusRecorder{ResponseWriter: w, onStatus: func(code int) {
			if code == http.StatusForbidden {
				p.mu.Lock()
				defer p.mu.Unlock()
				p.f = append(p.f, fmt.Sprintf("%s: %s %s", user, r.Method, r.URL.RequestURI()))
			}
		}}, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *forbiddenProxy) forbidden() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.f)
}

func (p *forbiddenProxy) requests(user string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n[user]
}

// restConfig reaches the apiserver through the proxy as user.
func (p *forbiddenProxy) restConfig(user string) *rest.Config {
	return &rest.Config{Host: p.srv.URL, Impersonate: rest.ImpersonationConfig{UserName: user}, QPS: 200, Burst: 400}
}

// kubeconfig writes a kubeconfig that reaches the apiserver through the proxy as user.
func (p *forbiddenProxy) kubeconfig(t *testing.T, dir, name, user string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["proxy"] = &clientcmdapi.Cluster{Server: p.srv.URL}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Impersonate: user}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: name}
	kc.CurrentContext = name
	path := filepath.Join(dir, name+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

type statusRecorder struct {
	http.ResponseWriter
	onStatus func(int)
}

func (r *statusRecorder) WriteHeader(code int) {
	r.onStatus(code)
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// allowed asks the apiserver whether a ServiceAccount user may do something.
func allowed(ctx context.Context, t *testing.T, user, saNamespace string, attr authorizationv1.ResourceAttributes) bool {
	t.Helper()
	sar, err := env.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               user,
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + saNamespace, "system:authenticated"},
			ResourceAttributes: &attr,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return sar.Status.Allowed
}

// takeLease creates (or takes over) and renews a Lease as the given client, as leader election does.
func takeLease(ctx context.Context, t *testing.T, cfg *rest.Config, ns, name string) {
	t.Helper()
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	leases := c.CoordinationV1().Leases(ns)
	holder := "install-test"
	lease, err := leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder},
		}, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatalf("Lease %s/%s: %v", ns, name, err)
	}
	now := metav1.NewMicroTime(time.Now())
	lease.Spec.RenewTime = &now
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("renewing Lease %s/%s: %v", ns, name, err)
	}
}

func withoutLeaderElection(t *testing.T, config string) string {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(config), &doc); err != nil {
		t.Fatal(err)
	}
	doc["leaderElection"] = map[string]any{"leaderElect": false}
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// setCR makes node's ClusterScopedResource offer memory, and cpu when cpu is true.
func setCR(ctx context.Context, t *testing.T, node string, cpu bool) {
	t.Helper()
	spec := schedv1alpha1.ClusterScopedResourceSpec{ResourcesFilter: map[corev1.ResourceName]bool{corev1.ResourceCPU: cpu, corev1.ResourceMemory: true}}
	crs := env.Accord.SchedulingV1alpha1().ClusterScopedResources()
	cur, err := crs.Get(ctx, node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = crs.Create(ctx, &schedv1alpha1.ClusterScopedResource{ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: spec}, metav1.CreateOptions{})
	} else if err == nil {
		cur.Spec = spec
		_, err = crs.Update(ctx, cur, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

func createDeployment(ctx context.Context, t *testing.T, ns string, replicas int32) {
	t.Helper()
	labels := map[string]string{"app": "install-work"}
	_, err := env.Client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "work"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0),
					SchedulerName: server.SchedulerName,
					Containers: []corev1.Container{{Name: "c", Image: "example.com/work", Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
					}}},
				},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// podsOn lists the live pods of ns bound to node.
func podsOn(ctx context.Context, t *testing.T, ns, node string) []corev1.Pod {
	t.Helper()
	pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.Spec.NodeName == node && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// countEvents counts the Events of ns with a reason, reported by a controller.
func countEvents(ctx context.Context, t *testing.T, ns, reason, controller string) int {
	t.Helper()
	evs, err := env.Client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs.Items {
		if e.Reason == reason && e.ReportingController == controller {
			n++
		}
	}
	return n
}

func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := harness.WaitFor(ctx, time.Minute, func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
