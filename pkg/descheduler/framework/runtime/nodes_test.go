package runtime_test

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins"
)

// nodeLooker records what Handle.Nodes answers during its Deschedule.
type nodeLooker struct {
	h                 framework.Handle
	given, all, zone1 []string
	sameSlice         bool
}

func (l *nodeLooker) Name() string { return "NodeLooker" }
func (l *nodeLooker) Deschedule(_ context.Context, nodes []*corev1.Node) *framework.Status {
	all, err := l.h.Nodes(nil)
	if err != nil {
		return framework.NewStatus(err)
	}
	again, _ := l.h.Nodes(labels.Everything())
	zone1, _ := l.h.Nodes(labels.SelectorFromSet(labels.Set{"zone": "1"}))
	l.given, l.all, l.zone1 = nodeNames(nodes), nodeNames(all), nodeNames(zone1)
	l.sameSlice = len(all) > 0 && &all[0] == &again[0]
	return nil
}

func nodeNames(nodes []*corev1.Node) []string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	slices.Sort(out)
	return out
}

// Handle.Nodes answers from the node list the cycle took at its start (every node, Ready or not,
// the same slice on each call), filtered by the selector asked for; outside a cycle it answers from
// the informer cache's list, listed again after a Node event.
func TestHandleNodesIsTheCycleList(t *testing.T) {
	l := &nodeLooker{}
	reg := plugins.NewInTreeRegistry()
	_ = reg.Register("NodeLooker", func(_ context.Context, _ runtime.Object, h framework.Handle) (framework.Plugin, error) {
		l.h = h
		return l, nil
	})
	notReady := fake.Node("n3", map[string]string{"zone": "1"}, 4, 8)
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	c := fake.NewCluster(fake.Node("n1", map[string]string{"zone": "1"}, 4, 8), fake.Node("n2", map[string]string{"zone": "2"}, 4, 8), notReady)
	d, err := build(t, c, reg, `profiles:
- name: p
  plugins:
    deschedule: {enabled: [NodeLooker]}
    preEvictionFilter: {disabled: [SchedulerSimulation]}
`, false)
	if err != nil {
		t.Fatal(err)
	}
	startSynced(t, c, d)
	d.RunCycle(context.Background())
	if want := []string{"n1", "n2"}; !slices.Equal(l.given, want) {
		t.Errorf("Deschedule was given %v, want the Ready nodes %v", l.given, want)
	}
	if want := []string{"n1", "n2", "n3"}; !slices.Equal(l.all, want) {
		t.Errorf("Nodes(nil) = %v, want every node %v", l.all, want)
	}
	if want := []string{"n1", "n3"}; !slices.Equal(l.zone1, want) {
		t.Errorf("Nodes(zone=1) = %v, want %v", l.zone1, want)
	}
	if !l.sameSlice {
		t.Error("Nodes listed again within the cycle; want the cycle's one list")
	}

	// Outside a cycle: the informer cache's list, kept (the same slice) until a Node event, which a
	// later call sees: a node added, a node's labels changed, a node deleted.
	first, _ := l.h.Nodes(nil)
	if again, _ := l.h.Nodes(nil); len(first) == 0 || &first[0] != &again[0] {
		t.Error("Nodes listed again outside a cycle without a Node event; want the kept list")
	}
	if _, err := c.Client.CoreV1().Nodes().Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n4"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		nodes, err := l.h.Nodes(nil)
		return err == nil && slices.Contains(nodeNames(nodes), "n4")
	})
	zone1 := labels.SelectorFromSet(labels.Set{"zone": "1"})
	n2, err := c.Client.CoreV1().Nodes().Get(t.Context(), "n2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n2.Labels["zone"] = "1"
	if _, err := c.Client.CoreV1().Nodes().Update(t.Context(), n2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		nodes, err := l.h.Nodes(zone1)
		return err == nil && slices.Equal(nodeNames(nodes), []string{"n1", "n2", "n3"})
	})
	if err := c.Client.CoreV1().Nodes().Delete(t.Context(), "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		nodes, err := l.h.Nodes(zone1)
		return err == nil && slices.Equal(nodeNames(nodes), []string{"n2", "n3"})
	})
}
