package metricsource

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// In-cluster service account files: the token a pod's service account authenticates with and the
// cluster's CA, which also signs in-cluster Prometheus endpoints in many setups.
const (
	ServiceAccountTokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	ServiceAccountCAFile    = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
)

// NodeLabel is the label a node-level Prometheus sample names its node with: `instance`, as the
// upstream descheduler expects (a query that aggregates `by (instance)` with relabelled node names).
const NodeLabel = "instance"

// PrometheusConfig configures a Prometheus client.
type PrometheusConfig struct {
	// URL of the server (the API is under URL/api/v1).
	URL string
	// Token returns the bearer token sent with each request; "" sends none, and an error fails the
	// request with it (e.g. the token's Secret is missing). Nil sends none.
	Token func() (string, error)
	// Transport is the base transport; nil uses one that trusts the system roots plus CAFile.
	Transport http.RoundTripper
	// CAFile, when it exists, is trusted in addition to the system roots (default transport only).
	CAFile string
	// Timeout bounds each query; default 30 s.
	Timeout time.Duration
}

// Prometheus runs instant queries over a Prometheus server's HTTP API.
type Prometheus struct {
	api     promv1.API
	url     string
	timeout time.Duration
	base    http.RoundTripper
}

// CloseIdleConnections closes the idle connections of the client's transport.
func (p *Prometheus) CloseIdleConnections() {
	if c, ok := p.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// NewPrometheus returns a client; nothing is sent until a query.
func NewPrometheus(cfg PrometheusConfig) (*Prometheus, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("prometheus url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("prometheus url %q: want http(s)://host[:port][/path]", cfg.URL)
	}
	base := cfg.Transport
	if base == nil {
		base, err = defaultTransport(cfg.CAFile)
		if err != nil {
			return nil, err
		}
	}
	rt := base
	if cfg.Token != nil {
		rt = &bearer{token: cfg.Token, next: base}
	}
	c, err := promapi.NewClient(promapi.Config{Address: cfg.URL, RoundTripper: rt})
	if err != nil {
		return nil, fmt.Errorf("prometheus client: %w", err)
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	return &Prometheus{api: promv1.NewAPI(c), url: cfg.URL, timeout: timeout, base: base}, nil
}

func defaultTransport(caFile string) (http.RoundTripper, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if caFile == "" {
		return t, nil
	}
	pem, err := os.ReadFile(caFile)
	if errors.Is(err, os.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading CA file: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("CA file %s holds no PEM certificate", caFile)
	}
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return t, nil
}

// bearer adds `Authorization: Bearer <token>` to each request, reading the token each time so a
// rotated token is used at once.
type bearer struct {
	token func() (string, error)
	next  http.RoundTripper
}

func (b *bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := b.token()
	if err != nil {
		return nil, fmt.Errorf("prometheus bearer token: %w", err)
	}
	if tok == "" {
		return b.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+tok)
	return b.next.RoundTrip(req)
}

// ServiceAccountToken returns a Token function that reads the token file at path on every request
// (kubelet rotates it), and sends none when the file does not exist (not running in a pod).
func ServiceAccountToken(path string) func() (string, error) {
	return func() (string, error) {
		b, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		return strings.TrimSpace(string(b)), nil
	}
}

// VectorSample is one sample of an instant vector.
type VectorSample struct {
	Labels    map[string]string
	Value     float64
	Timestamp time.Time
}

// Query runs an instant query at time at (now when zero) and returns its result, which must be an
// instant vector.
func (p *Prometheus) Query(ctx context.Context, query string, at time.Time) ([]VectorSample, error) {
	if at.IsZero() {
		at = time.Now()
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	val, _, err := p.api.Query(ctx, query, at)
	if err != nil {
		return nil, fmt.Errorf("prometheus %s: query %q: %w", p.url, query, err)
	}
	vec, ok := val.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("prometheus %s: query %q returned a %s, want a vector", p.url, query, val.Type())
	}
	out := make([]VectorSample, 0, len(vec))
	for _, s := range vec {
		labels := make(map[string]string, len(s.Metric))
		for k, v := range s.Metric {
			labels[string(k)] = string(v)
		}
		out = append(out, VectorSample{Labels: labels, Value: float64(s.Value), Timestamp: s.Timestamp.Time()})
	}
	return out, nil
}

// NodeFractions runs a query whose samples each carry a node name in label NodeLabel (`instance`)
// and a value in [0, 1] (a node's utilization as a fraction), and returns the values by node. A
// sample without the label, with a value outside [0, 1] (or NaN), or a node named twice fails the
// whole query: the result would not say what each node uses.
func (p *Prometheus) NodeFractions(ctx context.Context, query string) (map[string]float64, error) {
	samples, err := p.Query(ctx, query, time.Time{})
	if err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(samples))
	for _, s := range samples {
		node, ok := s.Labels[NodeLabel]
		if !ok || node == "" {
			return nil, fmt.Errorf("prometheus query %q: a sample has no %q label (it must name the node): %v", query, NodeLabel, s.Labels)
		}
		if !(s.Value >= 0 && s.Value <= 1) {
			return nil, fmt.Errorf("prometheus query %q: node %q has value %v, want a fraction in [0, 1]", query, node, s.Value)
		}
		if _, dup := out[node]; dup {
			return nil, fmt.Errorf("prometheus query %q: node %q has more than one sample", query, node)
		}
		out[node] = s.Value
	}
	return out, nil
}
