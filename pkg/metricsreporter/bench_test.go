package metricsreporter

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	sloapply "github.com/accord-sched/accord/pkg/generated/applyconfiguration/slo/v1alpha1"
	"github.com/accord-sched/accord/pkg/metricsource"
)

// countingWriter counts requests and does nothing else.
type countingWriter struct{ creates, applies atomic.Int64 }

func (w *countingWriter) Create(context.Context, *slov1alpha1.NodeMetric) error {
	w.creates.Add(1)
	return nil
}

func (w *countingWriter) ApplyStatus(context.Context, *sloapply.NodeMetricApplyConfiguration) error {
	w.applies.Add(1)
	return nil
}

// BenchmarkReportRound: one report round at 5000 nodes and 100k pods (20 per node) with a fake
// source: a sample of every node and pod, then a status for every node (one apply request each).
// Reported: requests/op (every node once), ns/op and allocations of the reporter's own work.
func BenchmarkReportRound(b *testing.B) {
	const nodes, podsPerNode = 5000, 20
	f := newFixture(b, "p95")
	u := metricsource.Usage{Nodes: map[string]corev1.ResourceList{}, Pods: map[types.NamespacedName]corev1.ResourceList{}}
	for i := range nodes {
		name := fmt.Sprintf("node-%04d", i)
		if err := f.nodes.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name)}}); err != nil {
			b.Fatal(err)
		}
		if err := f.nms.Add(&slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			b.Fatal(err)
		}
		u.Nodes[name] = rl("1500m", "6Gi")
		for j := range podsPerNode {
			pod := fmt.Sprintf("pod-%04d-%02d", i, j)
			f.addPod(b, "ns", pod, name)
			u.Pods[types.NamespacedName{Namespace: "ns", Name: pod}] = rl("50m", "100Mi")
		}
	}
	f.src.usage = u
	w := &countingWriter{}
	f.r.writer = w
	ctx := context.Background()
	// Fill the window as a running reporter has it: interval/sampling period samples.
	for range 5 {
		if err := f.r.Sample(ctx); err != nil {
			b.Fatal(err)
		}
		f.clock.Step(10 * 1e9)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		// Every node due: forget the last report.
		f.r.mu.Lock()
		clear(f.r.reported)
		f.r.mu.Unlock()
		if err := f.r.Sample(ctx); err != nil {
			b.Fatal(err)
		}
		f.r.Round(ctx)
		f.clock.Step(10 * 1e9)
	}
	b.StopTimer()
	b.ReportMetric(float64(w.applies.Load()+w.creates.Load())/float64(b.N), "requests/op")
}
