package metricsreporter

import (
	"testing"

	"github.com/accord-sched/accord/apis/metricsreporter/validation"
)

// FuzzDecodeConfig: the decoder never panics, and whatever it accepts is defaulted and valid.
// `make test` runs the seed corpus; `go test -fuzz FuzzDecodeConfig ./pkg/metricsreporter/` explores.
func FuzzDecodeConfig(f *testing.F) {
	for _, s := range []string{
		header,
		header + "statistic: p95\nsamplingPeriodSeconds: 5\ndefaultReportIntervalSeconds: 30\n",
		header + "source:\n  type: Prometheus\n  prometheus:\n    url: https://prom:9090/x\n    nodeLabel: node\n",
		header + "source: {type: KubernetesMetrics}\nmaxConcurrentWrites: 3\n",
		`{"apiVersion":"metricsreporter/v1alpha1","kind":"MetricsReporterConfiguration","statistic":"last"}`,
		header + "statistic: [1]\n",
		"kind: MetricsReporterConfiguration\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeConfig(data)
		if err != nil {
			return
		}
		if errs := validation.Validate(c); len(errs) > 0 {
			t.Fatalf("accepted an invalid configuration: %v", errs)
		}
		if c.SamplingPeriodSeconds == nil || c.DefaultReportIntervalSeconds == nil || c.MaxConcurrentWrites == nil {
			t.Fatalf("accepted a configuration without defaults: %+v", c)
		}
	})
}
