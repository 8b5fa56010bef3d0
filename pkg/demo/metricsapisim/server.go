// Package metricsapisim serves a simulated resource metrics API (metrics.k8s.io/v1beta1, the API
// metrics-server implements) in-process, and registers it with a real kube-apiserver as an aggregated
// API, so that clients reach it exactly as they reach metrics-server: through the apiserver, with
// k8s.io/metrics' clientset. The playground (make run) serves the usage it simulates with it; the
// integration tests (through test/metricsapi) serve usage they set.
//
// How the registration works on pkg/demo/localcluster's apiserver (checked on Kubernetes v1.36):
//
//   - The APIService `v1beta1.metrics.k8s.io` points at a Service of type ExternalName whose
//     externalName is `localhost`, with the APIService's port set to the server's port. The
//     aggregator resolves an ExternalName Service to externalName:port, so no cluster networking,
//     kube-proxy or --enable-aggregator-routing is needed (a ClusterIP Service would need one of
//     them: nothing routes cluster IPs in a local cluster; Endpoints may not hold loopback addresses).
//   - The aggregator checks the backend's TLS certificate against the APIService's caBundle for the
//     name <service>.<namespace>.svc, so the server's certificate is issued for that name by a CA
//     made here.
//   - The availability controller polls the backend's discovery document
//     (/apis/metrics.k8s.io/v1beta1) and marks the APIService Available; until then the apiserver
//     answers 503. Register waits for Available and for a first successful list.
//   - The local apiserver is started without proxy client certificates (no --proxy-client-*), so the
//     aggregator's requests carry no client certificate: this server does not authenticate them
//     (metrics-server would, with the requestheader CA). It listens on loopback only.
package metricsapisim

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
)

// The registration's names.
const (
	Group          = "metrics.k8s.io"
	Version        = "v1beta1"
	APIServiceName = Version + "." + Group
	// DefaultServiceName and DefaultServiceNamespace name the ExternalName Service the APIService
	// points at, unless Options say otherwise.
	DefaultServiceName      = "accord-test-metrics-server"
	DefaultServiceNamespace = "kube-system"
)

// Provider returns the usage to serve; it is called on every request for metrics and returns maps
// the server may keep (not shared with the provider). Pods' usage is per container.
type Provider interface {
	Usage() (nodes map[string]corev1.ResourceList, pods map[types.NamespacedName][]metricsv1beta1.ContainerMetrics)
}

// ProviderFunc adapts a function to Provider.
type ProviderFunc func() (map[string]corev1.ResourceList, map[types.NamespacedName][]metricsv1beta1.ContainerMetrics)

// Usage calls f.
func (f ProviderFunc) Usage() (map[string]corev1.ResourceList, map[types.NamespacedName][]metricsv1beta1.ContainerMetrics) {
	return f()
}

// Options configure a Server.
type Options struct {
	// Provider is the usage served. Required.
	Provider Provider
	// Window is reported as each object's window; default 30 s.
	Window time.Duration
	// ServiceName and ServiceNamespace name the ExternalName Service Register creates (the serving
	// certificate is issued for it). Defaults: DefaultServiceName, DefaultServiceNamespace.
	ServiceName, ServiceNamespace string
}

// Server is an in-process metrics.k8s.io backend. The Timestamp of every object is the time of the
// request and the Window is Window.
type Server struct {
	// Window is reported as each object's window.
	Window time.Duration

	provider         Provider
	serviceName      string
	serviceNamespace string
	listener         net.Listener
	srv              *http.Server
	served           chan struct{}
	caPEM            []byte

	down     atomic.Bool
	requests atomic.Int64
}

// Start starts the server on a loopback port; Close stops it.
func Start(o Options) (*Server, error) {
	if o.Provider == nil {
		return nil, errors.New("metricsapisim: Options.Provider is required")
	}
	if o.Window == 0 {
		o.Window = 30 * time.Second
	}
	if o.ServiceName == "" {
		o.ServiceName = DefaultServiceName
	}
	if o.ServiceNamespace == "" {
		o.ServiceNamespace = DefaultServiceNamespace
	}
	s := &Server{Window: o.Window, provider: o.Provider, serviceName: o.ServiceName, serviceNamespace: o.ServiceNamespace, served: make(chan struct{})}
	caPEM, cert, err := newServingCert(o.ServiceName + "." + o.ServiceNamespace + ".svc")
	if err != nil {
		return nil, err
	}
	s.caPEM = caPEM
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.listener = l
	s.srv = &http.Server{
		Handler:           http.HandlerFunc(s.serve),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		defer close(s.served)
		_ = s.srv.ServeTLS(l, "", "") // returns http.ErrServerClosed after Close
	}()
	return s, nil
}

// Close stops the server and waits for its serving goroutine.
func (s *Server) Close() {
	_ = s.srv.Close()
	<-s.served
}

// URL is the server's own address (https://127.0.0.1:port).
func (s *Server) URL() string { return "https://" + s.listener.Addr().String() }

// Requests counts the requests served (discovery included).
func (s *Server) Requests() int64 { return s.requests.Load() }

// SetDown makes every request (discovery included) fail with 503, as an unreachable backend does
// through the aggregator.
func (s *Server) SetDown(down bool) { s.down.Store(down) }

// Static is a Provider of usage set per node and per pod container.
type Static struct {
	mu    sync.Mutex
	nodes map[string]corev1.ResourceList
	pods  map[types.NamespacedName][]metricsv1beta1.ContainerMetrics
}

// NewStatic returns a Static provider that reports nothing yet.
func NewStatic() *Static {
	return &Static{nodes: map[string]corev1.ResourceList{}, pods: map[types.NamespacedName][]metricsv1beta1.ContainerMetrics{}}
}

// Usage returns copies of the usage set.
func (st *Static) Usage() (map[string]corev1.ResourceList, map[types.NamespacedName][]metricsv1beta1.ContainerMetrics) {
	st.mu.Lock()
	defer st.mu.Unlock()
	nodes := make(map[string]corev1.ResourceList, len(st.nodes))
	for k, v := range st.nodes {
		nodes[k] = v.DeepCopy()
	}
	pods := make(map[types.NamespacedName][]metricsv1beta1.ContainerMetrics, len(st.pods))
	for k, v := range st.pods {
		cs := make([]metricsv1beta1.ContainerMetrics, len(v))
		for i := range v {
			v[i].DeepCopyInto(&cs[i])
		}
		pods[k] = cs
	}
	return nodes, pods
}

// SetNode sets a node's usage (cpu and memory quantities, e.g. "1500m", "3Gi").
func (st *Static) SetNode(name, cpu, memory string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.nodes[name] = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
}

// DeleteNode stops reporting a node.
func (st *Static) DeleteNode(name string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.nodes, name)
}

// SetPod sets a pod's usage as one container named "c".
func (st *Static) SetPod(namespace, name, cpu, memory string) {
	st.SetPodContainers(namespace, name, metricsv1beta1.ContainerMetrics{Name: "c", Usage: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}})
}

// SetPodContainers sets a pod's usage per container.
func (st *Static) SetPodContainers(namespace, name string, containers ...metricsv1beta1.ContainerMetrics) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.pods[types.NamespacedName{Namespace: namespace, Name: name}] = containers
}

// DeletePod stops reporting a pod.
func (st *Static) DeletePod(namespace, name string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.pods, types.NamespacedName{Namespace: namespace, Name: name})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	if s.down.Load() {
		writeStatus(w, apierrors.NewServiceUnavailable("the simulated metrics server is down"))
		return
	}
	if r.Method != http.MethodGet {
		writeStatus(w, apierrors.NewMethodNotSupported(metricsv1beta1.Resource("nodes"), r.Method))
		return
	}
	if r.URL.Path == "/openapi/v2" {
		// The aggregator merges every backend's OpenAPI document and retries (logging an error every
		// minute) while one is missing; an empty one is enough.
		writeJSON(w, map[string]any{"swagger": "2.0", "info": map[string]string{"title": "simulated metrics.k8s.io", "version": Version}, "paths": map[string]any{}})
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	// apis / metrics.k8s.io / v1beta1 / ...
	if len(parts) < 2 || parts[0] != "apis" || parts[1] != Group {
		writeStatus(w, apierrors.NewNotFound(metricsv1beta1.Resource(""), r.URL.Path))
		return
	}
	rest := parts[2:]
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	window := metav1.Duration{Duration: s.Window}
	switch {
	case len(rest) == 0:
		writeJSON(w, &metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: Group,
			Versions:         []metav1.GroupVersionForDiscovery{{GroupVersion: Group + "/" + Version, Version: Version}},
			PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: Group + "/" + Version, Version: Version}})
	case rest[0] != Version:
		writeStatus(w, apierrors.NewNotFound(metricsv1beta1.Resource(""), r.URL.Path))
	case len(rest) == 1:
		writeJSON(w, &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: Group + "/" + Version,
			APIResources: []metav1.APIResource{
				{Name: "nodes", Kind: "NodeMetrics", Verbs: metav1.Verbs{"get", "list"}},
				{Name: "pods", Namespaced: true, Kind: "PodMetrics", Verbs: metav1.Verbs{"get", "list"}},
			}})
	case rest[1] == "nodes" && len(rest) <= 3:
		nodes, _ := s.provider.Usage()
		list := &metricsv1beta1.NodeMetricsList{TypeMeta: metav1.TypeMeta{Kind: "NodeMetricsList", APIVersion: Group + "/" + Version}}
		for _, name := range sortedKeys(nodes) {
			if len(rest) == 3 && rest[2] != name {
				continue
			}
			list.Items = append(list.Items, metricsv1beta1.NodeMetrics{TypeMeta: metav1.TypeMeta{Kind: "NodeMetrics", APIVersion: Group + "/" + Version},
				ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: now}, Timestamp: now, Window: window, Usage: nodes[name]})
		}
		if len(rest) == 3 {
			if len(list.Items) == 0 {
				writeStatus(w, apierrors.NewNotFound(metricsv1beta1.Resource("nodes"), rest[2]))
				return
			}
			writeJSON(w, &list.Items[0])
			return
		}
		writeJSON(w, list)
	case rest[1] == "pods" && len(rest) == 2:
		s.writePods(w, "", "", now, window)
	case rest[1] == "namespaces" && len(rest) >= 4 && rest[3] == "pods" && len(rest) <= 5:
		name := ""
		if len(rest) == 5 {
			name = rest[4]
		}
		s.writePods(w, rest[2], name, now, window)
	default:
		writeStatus(w, apierrors.NewNotFound(metricsv1beta1.Resource(""), r.URL.Path))
	}
}

func (s *Server) writePods(w http.ResponseWriter, namespace, name string, now metav1.Time, window metav1.Duration) {
	_, pods := s.provider.Usage()
	list := &metricsv1beta1.PodMetricsList{TypeMeta: metav1.TypeMeta{Kind: "PodMetricsList", APIVersion: Group + "/" + Version}}
	keys := make([]types.NamespacedName, 0, len(pods))
	for k := range pods {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	for _, k := range keys {
		if (namespace != "" && k.Namespace != namespace) || (name != "" && k.Name != name) {
			continue
		}
		cs := pods[k]
		list.Items = append(list.Items, metricsv1beta1.PodMetrics{TypeMeta: metav1.TypeMeta{Kind: "PodMetrics", APIVersion: Group + "/" + Version},
			ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name, CreationTimestamp: now}, Timestamp: now, Window: window, Containers: cs})
	}
	if name != "" {
		if len(list.Items) == 0 {
			writeStatus(w, apierrors.NewNotFound(metricsv1beta1.Resource("pods"), name))
			return
		}
		writeJSON(w, &list.Items[0])
		return
	}
	writeJSON(w, list)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func writeJSON(w http.ResponseWriter, obj any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(obj)
}

func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	st := err.Status()
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	_ = json.NewEncoder(w).Encode(&st)
}

// Register makes the apiserver at cfg serve metrics.k8s.io from s: it creates the ExternalName
// Service and the APIService (replacing leftovers of an earlier registration), waits until the
// APIService is Available and a NodeMetrics list goes through, and returns a function that removes
// both.
func (s *Server) Register(ctx context.Context, cfg *rest.Config) (unregister func(context.Context) error, err error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	agg, err := aggregator.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	_, portStr, err := net.SplitHostPort(s.listener.Addr().String())
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, err
	}
	unregister = func(ctx context.Context) error {
		err1 := agg.ApiregistrationV1().APIServices().Delete(ctx, APIServiceName, metav1.DeleteOptions{})
		err2 := client.CoreV1().Services(s.serviceNamespace).Delete(ctx, s.serviceName, metav1.DeleteOptions{})
		for _, err := range []error{err1, err2} {
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		return nil
	}
	if err := unregister(ctx); err != nil {
		return nil, err
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: s.serviceName, Namespace: s.serviceNamespace},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"}}
	if _, err := client.CoreV1().Services(s.serviceNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating the metrics Service: %w", err)
	}
	p := int32(port)
	apisvc := &apiregv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: APIServiceName},
		Spec: apiregv1.APIServiceSpec{
			Service: &apiregv1.ServiceReference{Namespace: s.serviceNamespace, Name: s.serviceName, Port: &p},
			Group:   Group, Version: Version, CABundle: s.caPEM,
			GroupPriorityMinimum: 100, VersionPriority: 100,
		}}
	if _, err := agg.ApiregistrationV1().APIServices().Create(ctx, apisvc, metav1.CreateOptions{}); err != nil {
		_ = unregister(ctx)
		return nil, fmt.Errorf("creating the APIService: %w", err)
	}
	mcfg := rest.CopyConfig(cfg)
	mcfg.ContentType, mcfg.AcceptContentTypes = "application/json", "application/json"
	mc, err := metricsclient.NewForConfig(mcfg)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var last error
	for {
		got, err := agg.ApiregistrationV1().APIServices().Get(wctx, APIServiceName, metav1.GetOptions{})
		if err == nil {
			last = fmt.Errorf("APIService %s is not Available: %v", APIServiceName, got.Status.Conditions)
			for _, c := range got.Status.Conditions {
				if c.Type == apiregv1.Available && c.Status == apiregv1.ConditionTrue {
					if _, err := mc.MetricsV1beta1().NodeMetricses().List(wctx, metav1.ListOptions{}); err != nil {
						last = fmt.Errorf("listing NodeMetrics through the apiserver: %w", err)
					} else {
						return unregister, nil
					}
				}
			}
		} else {
			last = err
		}
		select {
		case <-wctx.Done():
			_ = unregister(ctx)
			return nil, fmt.Errorf("metrics.k8s.io did not become available through the apiserver within 60s: %w", last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// newServingCert makes a CA and a serving certificate it signs for dnsName, localhost and 127.0.0.1.
func newServingCert(dnsName string) (caPEM []byte, cert tls.Certificate, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, cert, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "accord-simulated-metrics-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, cert, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, cert, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, cert, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: dnsName},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		DNSNames: []string{dnsName, "localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, cert, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, cert, err
	}
	cert, err = tls.X509KeyPair(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		return nil, cert, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), cert, nil
}
