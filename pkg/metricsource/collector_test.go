package metricsource

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"
)

type fakeLister struct {
	samples map[string]Sample
	err     error
}

func (f *fakeLister) NodeUsages(context.Context) (map[string]Sample, error) {
	if f.err != nil {
		return nil, f.err
	}
	out := map[string]Sample{}
	for k, v := range f.samples {
		out[k] = v
	}
	return out, nil
}

func usage(cpu, mem string) Sample {
	return Sample{Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}
}

func TestNodeCollectorSmoothsLikeUpstream(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Now())
	src := &fakeLister{samples: map[string]Sample{"a": usage("1", "1Gi")}}
	c := NewNodeCollector(src, CollectorOptions{Clock: clk})
	if _, err := c.NodeUsage("a"); err == nil || !strings.Contains(err.Error(), "no node usage collected yet") {
		t.Fatalf("before the first poll: %v", err)
	}
	if err := c.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := c.NodeUsage("a")
	if err != nil || got[corev1.ResourceCPU] != 1000 {
		t.Fatalf("first sample is taken as is: %v %v", got, err)
	}
	// 0.9*1000 + 0.1*2000 = 1100 millicores; memory 0.9*1Gi + 0.1*3Gi = 1.2Gi.
	src.samples["a"] = usage("2", "3Gi")
	clk.Step(5 * time.Second)
	if err := c.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	got, _ = c.NodeUsage("a")
	if got[corev1.ResourceCPU] != 1100 {
		t.Errorf("cpu = %dm, want 1100m", got[corev1.ResourceCPU])
	}
	if want := int64(1.2 * (1 << 30) * 1000); got[corev1.ResourceMemory] != want {
		t.Errorf("memory = %d milli-bytes, want %d", got[corev1.ResourceMemory], want)
	}
}

func TestNodeCollectorNeverReportsZeroForMissingData(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Now())
	src := &fakeLister{samples: map[string]Sample{"a": usage("1", "1Gi"), "b": usage("500m", "1Gi")}}
	c := NewNodeCollector(src, CollectorOptions{Clock: clk, MaxAge: time.Minute})
	if err := c.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	// The source goes down: every node is unavailable, with the reason.
	src.err = errors.New("503 service unavailable")
	clk.Step(5 * time.Second)
	if err := c.Collect(ctx); err == nil {
		t.Fatal("want the poll's error")
	}
	if u, err := c.NodeUsage("a"); err == nil || !strings.Contains(err.Error(), "is down (last reached 5s ago)") {
		t.Fatalf("source down: got %v, %v", u, err)
	}
	// Back, but without node b: b keeps its value until MaxAge, then has none.
	src.err = nil
	delete(src.samples, "b")
	clk.Step(5 * time.Second)
	if err := c.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	if u, err := c.NodeUsage("b"); err != nil || u[corev1.ResourceCPU] != 500 {
		t.Fatalf("b within MaxAge: %v %v", u, err)
	}
	clk.Step(2 * time.Minute)
	if err := c.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	if u, err := c.NodeUsage("b"); err == nil || !strings.Contains(err.Error(), `has no usage for node "b"`) {
		t.Fatalf("b past MaxAge: %v %v", u, err)
	}
	if _, err := c.NodeUsage("never"); err == nil {
		t.Fatal("an unknown node has no usage")
	}
	// A node reporting cpu only is not taken (memory would read as zero).
	src.samples["c"] = Sample{Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
	if err := c.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.NodeUsage("c"); err == nil {
		t.Fatal("a partial sample must not count")
	}
}

func TestNodeCollectorRunAndFirstAttempt(t *testing.T) {
	src := &fakeLister{err: errors.New("connection refused")}
	c := NewNodeCollector(src, CollectorOptions{Interval: 10 * time.Millisecond, Beta: -1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.Run(ctx)
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	defer wcancel()
	if !c.WaitForFirstAttempt(wctx) {
		t.Fatal("no first attempt")
	}
	if err := c.Healthy(); err == nil || !strings.Contains(err.Error(), "never reached") {
		t.Fatalf("Healthy = %v", err)
	}
	src2 := &fakeLister{samples: map[string]Sample{"a": usage("1", "1Gi")}}
	c2 := NewNodeCollector(src2, CollectorOptions{Beta: -1})
	_ = c2.Collect(context.Background())
	src2.samples["a"] = usage("3", "1Gi")
	_ = c2.Collect(context.Background())
	if u, _ := c2.NodeUsage("a"); u[corev1.ResourceCPU] != 3000 {
		t.Fatalf("negative Beta keeps the latest sample: %v", u)
	}
}
