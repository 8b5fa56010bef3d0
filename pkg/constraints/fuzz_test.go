package constraints

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
)

// FuzzCompileCRs feeds arbitrary ClusterScopedResource and NodeMetric objects (as the apiserver
// would hand them over: JSON with any maps, quantities and names, including huge maps, negative or
// overflowing quantities and unicode resource names) and an arbitrary pod request to every verdict
// of the package: nothing panics, every score stays in its range, and the compiled forms agree with
// the direct ones. `make test` runs the seeds; `make fuzz` explores.
func FuzzCompileCRs(f *testing.F) {
	huge := map[string]any{}
	hugeFilter := map[string]bool{}
	for i := range 5000 {
		huge[fmt.Sprintf("example.com/r%d", i)] = i - 2500
		hugeFilter[fmt.Sprintf("example.com/r%d", i)] = i%2 == 0
	}
	hugeCSR, _ := json.Marshal(map[string]any{"spec": map[string]any{"resourcesFilter": hugeFilter, "resourcesScore": huge}})
	for _, s := range []struct{ csr, metric, request string }{
		{`{"spec":{"resourcesFilter":{"cpu":true,"memory":true},"resourcesScore":{"cpu":80,"memory":20}}}`,
			`{"status":{"updateTime":"2026-11-25T12:00:00Z","nodeUsage":{"cpu":"2","memory":"4Gi"}}}`, "cpu=500m,memory=1Gi"},
		{`{"spec":{"resourcesFilter":{"nvidia.com/gpu":false},"resourcesScore":{"nvidia.com/gpu":-5}}}`,
			`{"status":{"updateTime":"2026-11-25T12:00:00Z","nodeUsage":{"cpu":"-3","memory":"1e18"}}}`, "nvidia.com/gpu=1"},
		{`{"spec":{"resourcesScore":{"cpu":9223372036854775807,"ресурс/ü":101}}}`,
			`{"status":{"updateTime":"3000-01-01T00:00:00Z","nodeUsage":{"cpu":"9223372036854775807","ресурс/ü":"1"}}}`, "ресурс/ü=3,cpu=9e18"},
		{`{}`, `{}`, ""},
		{`{"spec":{"resourcesFilter":{"":true}}}`, `{"status":{"nodeUsage":{"cpu":"0"}}}`, "=1"},
		{string(hugeCSR), `{"status":{"updateTime":"2026-11-25T12:00:00Z","nodeUsage":{"example.com/r7":"100"}}}`, "example.com/r7=1,example.com/r8=2"},
	} {
		f.Add([]byte(s.csr), []byte(s.metric), s.request, int64(4000), int64(80))
	}
	now := time.Date(2026, 11, 25, 12, 0, 30, 0, time.UTC)
	f.Fuzz(func(t *testing.T, csrJSON, metricJSON []byte, request string, allocMilli, percent int64) {
		var csr schedv1alpha1.ClusterScopedResource
		if json.Unmarshal(csrJSON, &csr) != nil {
			return
		}
		var metric slov1alpha1.NodeMetric
		if json.Unmarshal(metricJSON, &metric) != nil {
			return
		}
		requests := corev1.ResourceList{}
		var names []corev1.ResourceName
		for _, kv := range strings.Split(request, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				continue
			}
			q, err := resource.ParseQuantity(v)
			if err != nil {
				continue
			}
			requests[corev1.ResourceName(k)] = q
			names = append(names, corev1.ResourceName(k))
		}

		// ClusterScopedResource verdicts, direct and through the compiled Offer.
		offer := NewOffer(&csr)
		for _, ignore := range []bool{false, true} {
			if a, b := FitCR(&csr, names, ignore), offer.Fit(names, ignore); a != b {
				t.Fatalf("FitCR = %+v, Offer.Fit = %+v", a, b)
			}
		}
		if fit := FitCR(&csr, names, false); fit.NoCR {
			t.Fatalf("FitCR of a present ClusterScopedResource says NoCR: %+v", fit)
		}
		score := NodeScore(&csr, names)
		if score < 0 || score > schedv1alpha1.MaxResourceScore {
			t.Fatalf("NodeScore = %d, out of 0..%d", score, schedv1alpha1.MaxResourceScore)
		}
		if c := offer.NodeScore(names); c != score {
			t.Fatalf("Offer.NodeScore = %d, NodeScore = %d", c, score)
		}
		for _, n := range names {
			if s := ResourceScore(&csr, n); s < 0 || s > schedv1alpha1.MaxResourceScore {
				t.Fatalf("ResourceScore(%q) = %d", n, s)
			}
		}

		// NodeMetric verdicts.
		alloc := corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(allocMilli, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(allocMilli<<20, resource.BinarySI),
		}
		for n := range requests {
			alloc[n] = *resource.NewQuantity(allocMilli, resource.DecimalSI)
		}
		var thresholds []ResourceThreshold
		var weights []ResourceWeight
		for n := range alloc {
			thresholds = append(thresholds, ResourceThreshold{Name: n, Percent: percent})
			weights = append(weights, ResourceWeight{Name: n, Weight: percent%7 + 1})
		}
		for _, maxAge := range []time.Duration{0, time.Minute} {
			check := CheckLoad(&metric, alloc, thresholds, now, maxAge)
			if check.Stale && check.Overloaded {
				t.Fatalf("a stale metric overloads the node: %+v", check)
			}
			ls := LoadScore(&metric, alloc, requests, weights, now, maxAge)
			if ls < 0 || ls > MaxLoadScore {
				t.Fatalf("LoadScore = %d, out of 0..%d", ls, MaxLoadScore)
			}
			if MetricFresh(&metric, now, maxAge) {
				nl := NewNodeLoad(NewLoad(&metric), alloc, thresholds, weights)
				if c := nl.Check(now, maxAge); c != check {
					t.Fatalf("NodeLoad.Check = %+v, CheckLoad = %+v", c, check)
				}
			}
		}
	})
}
