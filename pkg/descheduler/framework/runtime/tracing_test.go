package runtime_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins"
	fwruntime "github.com/accord-sched/accord/pkg/descheduler/framework/runtime"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
	"github.com/accord-sched/accord/pkg/descheduler/policy"
)

type failingBalancer struct{}

func (failingBalancer) Name() string { return "Failer" }
func (failingBalancer) Balance(context.Context, []*corev1.Node) *framework.Status {
	return framework.Errorf("broken")
}

// A cycle is a span; each plugin call is its child, with the profile, plugin and result; each
// eviction is a child of the plugin's span with the pod, node and result.
func TestRuntimeTracesCyclesPluginsEvictions(t *testing.T) {
	reg := plugins.NewInTreeRegistry()
	_ = reg.Register("Nominator", func(_ context.Context, _ runtime.Object, h framework.Handle) (framework.Plugin, error) {
		return &hookNominator{name: "Nominator", h: h}, nil
	})
	_ = reg.Register("Failer", func(context.Context, runtime.Object, framework.Handle) (framework.Plugin, error) {
		return failingBalancer{}, nil
	})
	c := fake.NewCluster(fake.Node("n1", nil, 4, 8), fake.Pod("ns", "a", "n1", 100), fake.Pod("ns", "b", "n1", 100))
	p, err := policy.Decode([]byte(`apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
maxNoOfPodsToEvictPerNode: 1
profiles:
- name: p
  plugins:
    deschedule: {enabled: [Nominator]}
    balance: {enabled: [Failer]}
    preEvictionFilter: {disabled: [SchedulerSimulation]}
`), plugins.NewInTreeArgs())
	if err != nil {
		t.Fatal(err)
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	d, err := fwruntime.New(t.Context(), p, fwruntime.Options{Client: c.Client, InformerFactory: c.Factory, AccordInformerFactory: c.CRs,
		Registry: reg, Metrics: metrics.New(), TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	startSynced(t, c, d)
	d.RunCycle(context.Background())

	attrs := func(s sdktrace.ReadOnlySpan) map[string]string {
		m := map[string]string{}
		for _, kv := range s.Attributes() {
			m[string(kv.Key)] = kv.Value.Emit()
		}
		return m
	}
	byName := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		byName[s.Name()] = append(byName[s.Name()], s)
	}
	if len(byName[fwruntime.SpanCycle]) != 1 || len(byName["deschedule/Nominator"]) != 1 || len(byName["balance/Failer"]) != 1 || len(byName[fwruntime.SpanEvict]) != 2 {
		t.Fatalf("spans = %v", byName)
	}
	cycle := byName[fwruntime.SpanCycle][0]
	if a := attrs(cycle); a["nodes"] != "1" || a["evictions"] != "1" {
		t.Errorf("cycle attributes = %v", a)
	}
	nominator, failer := byName["deschedule/Nominator"][0], byName["balance/Failer"][0]
	for _, s := range []sdktrace.ReadOnlySpan{nominator, failer} {
		if s.Parent().SpanID() != cycle.SpanContext().SpanID() {
			t.Errorf("%s is not a child of the cycle", s.Name())
		}
	}
	if a := attrs(nominator); a["profile"] != "p" || a["plugin"] != "Nominator" || a["operation"] != "deschedule" || a["result"] != "success" {
		t.Errorf("plugin span attributes = %v", a)
	}
	if a := attrs(failer); a["result"] != "error" || failer.Status().Code != codes.Error {
		t.Errorf("failing plugin span: %v, status %v", a, failer.Status())
	}
	results := map[string]string{}
	for _, s := range byName[fwruntime.SpanEvict] {
		a := attrs(s)
		if s.Parent().SpanID() != nominator.SpanContext().SpanID() || a["plugin"] != "Nominator" || a["node"] != "n1" || a["reason"] != "test" {
			t.Errorf("eviction span %v (parent %v)", a, s.Parent().SpanID())
		}
		results[a["pod"]] = a["result"]
	}
	if results["ns/a"] != "success" || results["ns/b"] != "limit" {
		t.Errorf("eviction results = %v, want ns/a success and ns/b limit (node limit 1)", results)
	}
}
