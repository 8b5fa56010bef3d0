package metricsource

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// queryAPI answers each query with the body keyed by the query text; an unknown query fails.
func queryAPI(t *testing.T, bodies map[string]string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body, ok := bodies[r.Form.Get("query")]
		if !ok {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"status":"error","errorType":"bad_data","error":"unknown query"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestPrometheusUsage(t *testing.T) {
	q := PrometheusUsageQueries{NodeCPU: "ncpu", NodeMemory: "nmem", PodCPU: "pcpu", PodMemory: "pmem",
		NodeLabel: "node", PodNamespaceLabel: "namespace", PodNameLabel: "pod"}
	bodies := map[string]string{
		"ncpu": vector(`{"metric":{"node":"a"},"value":[1700000000,"1.25"]}`, `{"metric":{"node":"b"},"value":[1700000000,"0.5"]}`,
			`{"metric":{"instance":"x"},"value":[1700000000,"9"]}`, `{"metric":{"node":"c"},"value":[1700000000,"-1"]}`),
		"nmem": vector(`{"metric":{"node":"a"},"value":[1700000000,"1073741824"]}`, `{"metric":{"node":"c"},"value":[1700000000,"5"]}`),
		"pcpu": vector(`{"metric":{"namespace":"ns","pod":"p"},"value":[1700000000,"0.1"]}`, `{"metric":{"namespace":"ns","pod":"q"},"value":[1700000000,"NaN"]}`),
		"pmem": vector(`{"metric":{"namespace":"ns","pod":"p"},"value":[1700000000,"1048576"]}`, `{"metric":{"namespace":"ns","pod":"q"},"value":[1700000000,"1"]}`),
	}
	srv := queryAPI(t, bodies)
	p, err := NewPrometheus(PrometheusConfig{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	src := PrometheusUsage{Client: p, Queries: q}
	u, err := src.Usage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// b has no memory sample, c a negative CPU, x no node label: only a is reported.
	a := u.Nodes["a"]
	if len(u.Nodes) != 1 || a.Cpu().String() != "1250m" || a.Memory().String() != "1Gi" {
		t.Fatalf("nodes %v, want a only at 1250m/1Gi", u.Nodes)
	}
	// q's CPU is NaN: only p is reported.
	pu := u.Pods[types.NamespacedName{Namespace: "ns", Name: "p"}]
	if len(u.Pods) != 1 || pu.Cpu().String() != "100m" || pu.Memory().String() != "1Mi" {
		t.Fatalf("pods %v, want ns/p at 100m/1Mi", u.Pods)
	}

	// A node named twice or a failed query fails the reading.
	bodies["nmem"] = vector(`{"metric":{"node":"a","x":"1"},"value":[1700000000,"1"]}`, `{"metric":{"node":"a","x":"2"},"value":[1700000000,"2"]}`)
	if _, err := src.Usage(context.Background()); err == nil || !strings.Contains(err.Error(), "more than one sample") {
		t.Fatalf("error %v, want more than one sample", err)
	}
	delete(bodies, "pmem")
	bodies["nmem"] = vector()
	if _, err := src.Usage(context.Background()); err == nil || !strings.Contains(err.Error(), "unknown query") {
		t.Fatalf("error %v, want the query's failure", err)
	}
}
