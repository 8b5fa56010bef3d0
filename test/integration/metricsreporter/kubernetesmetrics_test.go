package metricsreporter

import (
	"context"
	"testing"
	"time"

	"github.com/accord-sched/accord/test/harness"
)

// TestKubernetesMetrics: with metrics.k8s.io served through the real aggregator, the reporter
// creates a NodeMetric per node (owned by the node) and writes node and pod usage; a change shows
// in the next report; with the source down the NodeMetrics go stale (updateTime stops, never a zero
// written); when it is back they update again.
func TestKubernetesMetrics(t *testing.T) {
	ctx := context.Background()
	m := startMetricsAPI(t)
	ns := env.CreateNamespace(t, "mr-kube")
	nodes := newNodes(t, ns, "a", "b")
	newPod(t, ns, "p1", nodes[0], "100m")
	m.SetNode(nodes[0], "1500m", "3Gi")
	m.SetNode(nodes[1], "200m", "1Gi")
	m.SetPod(ns, "p1", "700m", "200Mi")
	checkZeros := zeroWatch(t, nodes...)
	startReporter(t, "samplingPeriodSeconds: 1\ndefaultReportIntervalSeconds: 2\nstatistic: last\n")

	if err := harness.WaitFor(ctx, 30*time.Second, func(context.Context) (bool, error) {
		a, b := getNM(t, nodes[0]), getNM(t, nodes[1])
		return cpuOf(a) == "1500m" && cpuOf(b) == "200m" && len(a.Status.PodsUsage) == 1, nil
	}); err != nil {
		t.Fatalf("NodeMetrics not reported: %v (%+v)", err, getNM(t, nodes[0]))
	}
	a := getNM(t, nodes[0])
	if len(a.OwnerReferences) != 1 || a.OwnerReferences[0].Kind != "Node" || a.OwnerReferences[0].Name != nodes[0] {
		t.Fatalf("ownerReferences %+v, want the node", a.OwnerReferences)
	}
	if a.Spec.ReportIntervalSeconds == nil || *a.Spec.ReportIntervalSeconds != 2 {
		t.Fatalf("spec.reportIntervalSeconds = %v, want 2", a.Spec.ReportIntervalSeconds)
	}
	pu := a.Status.PodsUsage[0]
	if pu.Namespace != ns || pu.Name != "p1" || pu.Usage.Cpu().String() != "700m" {
		t.Fatalf("podsUsage = %+v, want p1 at 700m", a.Status.PodsUsage)
	}
	found := false
	for _, f := range a.ManagedFields {
		found = found || (f.Manager == "accord-metrics-reporter" && f.Subresource == "status" && f.Operation == "Apply")
	}
	if !found {
		t.Fatalf("status not applied by field manager accord-metrics-reporter: %+v", a.ManagedFields)
	}

	// An update shows.
	m.SetNode(nodes[0], "3", "3Gi")
	if err := harness.WaitFor(ctx, 15*time.Second, func(context.Context) (bool, error) {
		return cpuOf(getNM(t, nodes[0])) == "3", nil
	}); err != nil {
		t.Fatalf("update not reported: %v (cpu %s)", err, cpuOf(getNM(t, nodes[0])))
	}

	// The source goes down: nothing is written for 3 report intervals.
	m.SetDown(true)
	time.Sleep(2 * time.Second) // a write in flight lands
	before := getNM(t, nodes[0]).Status.UpdateTime.Time
	time.Sleep(6 * time.Second)
	after := getNM(t, nodes[0])
	if !after.Status.UpdateTime.Time.Equal(before) {
		t.Fatalf("updateTime moved from %s to %s with the source down", before, after.Status.UpdateTime)
	}
	if cpuOf(after) != "3" {
		t.Fatalf("cpu %s with the source down, want the last reported 3", cpuOf(after))
	}

	// It comes back.
	m.SetNode(nodes[0], "2", "3Gi")
	m.SetDown(false)
	if err := harness.WaitFor(ctx, 30*time.Second, func(context.Context) (bool, error) {
		nm := getNM(t, nodes[0])
		return cpuOf(nm) == "2" && nm.Status.UpdateTime.After(before), nil
	}); err != nil {
		t.Fatalf("not reported after the source came back: %v (cpu %s)", err, cpuOf(getNM(t, nodes[0])))
	}
	// A node the source stops reporting goes stale too, while the other keeps updating.
	m.DeleteNode(nodes[1])
	time.Sleep(2 * time.Second)
	staleB := getNM(t, nodes[1]).Status.UpdateTime.Time
	time.Sleep(5 * time.Second)
	if got := getNM(t, nodes[1]).Status.UpdateTime.Time; !got.Equal(staleB) {
		t.Fatalf("node b updated (%s -> %s) though the source does not report it", staleB, got)
	}
	checkZeros()
}
