package metricsapisim

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"testing"

	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// The server speaks TLS with a certificate its CA signs, serves the usage of its Provider as the
// metrics API types, and answers 503 while down.
func TestServer(t *testing.T) {
	st := NewStatic()
	st.SetNode("n1", "1500m", "2Gi")
	st.SetPod("ns", "p", "250m", "64Mi")
	s, err := Start(Options{Provider: st})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.caPEM) {
		t.Fatal("bad CA")
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	get := func(path string, into any) int {
		t.Helper()
		resp, err := client.Get(s.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if into != nil && resp.StatusCode == http.StatusOK {
			if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
				t.Fatal(err)
			}
		}
		return resp.StatusCode
	}
	var nodes metricsv1beta1.NodeMetricsList
	if code := get("/apis/metrics.k8s.io/v1beta1/nodes", &nodes); code != http.StatusOK || len(nodes.Items) != 1 ||
		nodes.Items[0].Name != "n1" || nodes.Items[0].Usage.Cpu().MilliValue() != 1500 || nodes.Items[0].Window.Duration != s.Window {
		t.Errorf("nodes: %d %+v", code, nodes.Items)
	}
	var pod metricsv1beta1.PodMetrics
	if code := get("/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods/p", &pod); code != http.StatusOK || len(pod.Containers) != 1 || pod.Containers[0].Usage.Memory().String() != "64Mi" {
		t.Errorf("pod: %d %+v", code, pod)
	}
	if code := get("/apis/metrics.k8s.io/v1beta1/nodes/n2", nil); code != http.StatusNotFound {
		t.Errorf("unknown node: %d, want 404", code)
	}
	st.DeleteNode("n1")
	if code := get("/apis/metrics.k8s.io/v1beta1/nodes", &nodes); code != http.StatusOK || len(nodes.Items) != 0 {
		t.Errorf("after DeleteNode: %d %+v", code, nodes.Items)
	}
	s.SetDown(true)
	if code := get("/apis/metrics.k8s.io/v1beta1", nil); code != http.StatusServiceUnavailable {
		t.Errorf("down: %d, want 503", code)
	}
	if s.Requests() != 5 {
		t.Errorf("%d requests counted, want 5", s.Requests())
	}
}

func TestStartNeedsProvider(t *testing.T) {
	if _, err := Start(Options{}); err == nil {
		t.Error("Start without a Provider succeeded")
	}
}
