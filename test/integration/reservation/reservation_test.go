package reservation

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/test/harness"
)

// cluster is a test's namespace and its nodes (2 CPUs each), which only its pods select.
type cluster struct {
	ns    string
	nodes []string
}

func newCluster(t *testing.T, prefix string, nodes int) *cluster {
	t.Helper()
	ctx := context.Background()
	c := &cluster{ns: env.CreateNamespace(t, prefix)}
	for i := range nodes {
		name := fmt.Sprintf("%s-n%d", c.ns, i)
		if _, err := env.Nodes.CreateNode(ctx, harness.NodeSpec{Name: name, Labels: map[string]string{nsLabel: c.ns},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		c.nodes = append(c.nodes, name)
	}
	if err := env.Nodes.WaitForNodesReady(ctx, c.nodes...); err != nil {
		t.Fatal(err)
	}
	return c
}

// spec is a pod spec for accord-scheduler asking for cpu, on this test's nodes, avoiding avoid.
func (c *cluster) spec(cpu string, avoid ...string) corev1.PodSpec {
	s := corev1.PodSpec{
		SchedulerName: schedulerName, TerminationGracePeriodSeconds: ptr.To[int64](0),
		NodeSelector: map[string]string{nsLabel: c.ns},
		Containers: []corev1.Container{{Name: "c", Image: "pause", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}},
	}
	if len(avoid) > 0 {
		s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
				Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: avoid}}}}}}}
	}
	return s
}

func (c *cluster) createPod(t *testing.T, name string, spec corev1.PodSpec) {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.ns}, Spec: spec}
	if _, err := env.Client.CoreV1().Pods(c.ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// reserve creates a reservation for a pod named owner.
func (c *cluster) reserve(t *testing.T, name, owner string, spec corev1.PodSpec, ttl time.Duration) {
	t.Helper()
	r := &schedv1alpha1.Reservation{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.ns},
		Spec: schedv1alpha1.ReservationSpec{
			Template: corev1.PodTemplateSpec{Spec: spec},
			Owners:   []schedv1alpha1.ReservationOwner{{Pod: &schedv1alpha1.ReservationPodOwner{Name: owner}}},
			TTL:      &metav1.Duration{Duration: ttl},
		},
	}
	if _, err := env.Accord.SchedulingV1alpha1().Reservations(c.ns).Create(context.Background(), r, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitPhase waits until the reservation reaches phase and returns it.
func (c *cluster) waitPhase(t *testing.T, name string, phase schedv1alpha1.ReservationPhase, timeout time.Duration) *schedv1alpha1.Reservation {
	t.Helper()
	var last *schedv1alpha1.Reservation
	err := harness.WaitFor(context.Background(), timeout, func(ctx context.Context) (bool, error) {
		r, err := env.Accord.SchedulingV1alpha1().Reservations(c.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = r
		return r.Status.Phase == phase, nil
	})
	if err != nil {
		t.Fatalf("reservation %s not %s: %v; last status %+v", name, phase, err, last.Status)
	}
	return last
}

// nodeOf waits (at most timeout) until the pod is bound, and returns its node ("" when it is not).
func (c *cluster) nodeOf(t *testing.T, name string, timeout time.Duration) string {
	t.Helper()
	var node string
	_ = harness.WaitFor(context.Background(), timeout, func(ctx context.Context) (bool, error) {
		p, err := env.Client.CoreV1().Pods(c.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		node = p.Spec.NodeName
		return node != "", nil
	})
	return node
}

// TestReservationHoldsRoomForItsOwner: a reservation that avoids n0 is placed on n1 and Available;
// other pods cannot take the room it holds there; its owner pod is placed into it (even with other
// room on n0) and the reservation is Bound.
func TestReservationHoldsRoomForItsOwner(t *testing.T) {
	startScheduler(t)
	c := newCluster(t, "rsv-hold", 2)
	n0, n1 := c.nodes[0], c.nodes[1]
	c.reserve(t, "r", "owner", c.spec("1500m", n0), time.Minute)
	r := c.waitPhase(t, "r", schedv1alpha1.ReservationAvailable, 20*time.Second)
	if r.Status.NodeName != n1 {
		t.Fatalf("reservation placed on %q, want %s (the only node its template allows)", r.Status.NodeName, n1)
	}
	if r.Status.ExpireTime == nil {
		t.Errorf("Available reservation without expireTime: %+v", r.Status)
	}
	// Three pods of 1 CPU: two fit n0; n1 has 2 CPUs free but 1.5 held, so the third stays Pending.
	for i := range 3 {
		c.createPod(t, fmt.Sprintf("burst-%d", i), c.spec("1"))
	}
	onN0, pending := 0, 0
	for i := range 3 {
		switch node := c.nodeOf(t, fmt.Sprintf("burst-%d", i), 5*time.Second); node {
		case n0:
			onN0++
		case "":
			pending++
		default:
			t.Errorf("burst-%d placed on %s, in the room the reservation holds", i, node)
		}
	}
	if onN0 != 2 || pending != 1 {
		t.Errorf("want 2 burst pods on %s and 1 Pending, got %d and %d", n0, onN0, pending)
	}
	// The owner, without any affinity, goes into its reservation.
	c.createPod(t, "owner", c.spec("1500m"))
	if node := c.nodeOf(t, "owner", 20*time.Second); node != n1 {
		t.Fatalf("owner placed on %q, want its reservation's node %s", node, n1)
	}
	r = c.waitPhase(t, "r", schedv1alpha1.ReservationBound, 10*time.Second)
	if r.Status.BoundPod == nil || r.Status.BoundPod.Name != "owner" {
		t.Errorf("Bound reservation does not name its pod: %+v", r.Status)
	}
}

// TestReservationUnplaceableFails: a reservation no node can take is Failed with the scheduler's
// reason, and holds nothing.
func TestReservationUnplaceableFails(t *testing.T) {
	startScheduler(t)
	c := newCluster(t, "rsv-fail", 2)
	c.reserve(t, "big", "owner", c.spec("3"), time.Minute)
	r := c.waitPhase(t, "big", schedv1alpha1.ReservationFailed, 20*time.Second)
	if r.Status.Reason != "Unschedulable" || !strings.Contains(r.Status.Message, "0/") || !strings.Contains(r.Status.Message, "Insufficient cpu") {
		t.Errorf("want reason Unschedulable with the scheduler's message, got %+v", r.Status)
	}
	if r.Status.NodeName != "" {
		t.Errorf("a Failed reservation has a node: %+v", r.Status)
	}
	c.createPod(t, "p", c.spec("2"))
	if node := c.nodeOf(t, "p", 10*time.Second); node == "" {
		t.Errorf("a pod needing a whole node stays Pending beside a Failed reservation")
	}
}

// TestReservationTTLFreesRoom: a reservation nobody consumes expires after its TTL, and the pod
// that waited for its room is placed then.
func TestReservationTTLFreesRoom(t *testing.T) {
	startScheduler(t)
	c := newCluster(t, "rsv-ttl", 1)
	const ttl = 3 * time.Second
	c.reserve(t, "r", "nobody", c.spec("1500m"), ttl)
	c.waitPhase(t, "r", schedv1alpha1.ReservationAvailable, 20*time.Second)
	start := time.Now()
	c.createPod(t, "waiting", c.spec("1"))
	if node := c.nodeOf(t, "waiting", time.Second); node != "" {
		t.Fatalf("waiting placed on %s while the reservation holds the room", node)
	}
	r := c.waitPhase(t, "r", schedv1alpha1.ReservationExpired, ttl+10*time.Second)
	if r.Status.Reason != "TTLExpired" {
		t.Errorf("want reason TTLExpired, got %+v", r.Status)
	}
	if node := c.nodeOf(t, "waiting", 15*time.Second); node != c.nodes[0] {
		t.Fatalf("waiting not placed after the reservation expired (node %q)", node)
	}
	t.Logf("waiting placed %s after it was created, the reservation's TTL being %s", time.Since(start).Round(10*time.Millisecond), ttl)
}
