package playground

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/console"
	"github.com/accord-sched/accord/pkg/demo/playground"
	"github.com/accord-sched/accord/pkg/metricsreporter"
	"github.com/accord-sched/accord/test/harness"
)

func TestMain(m *testing.M) { harness.MainCheckingLeaks(m) }

// TestPlayground drives the playground's entry point as `make run` does and uses the cluster the way
// a user would: through the kubeconfig it writes.
func TestPlayground(t *testing.T) {
	// 3 minutes: the playground's checks, and one dry-run cycle of what-if (informers synced anew).
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p, err := playground.Start(ctx, playground.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("starting the playground: %v", err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			p.Stop()
		}
	}
	defer stop()

	// The kubeconfig it wrote reaches the cluster.
	cfg, err := clientcmd.BuildConfigFromFlags("", p.Kubeconfig)
	if err != nil {
		t.Fatalf("loading the playground kubeconfig: %v", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	// The sample nodes are Ready.
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ready := sets.New[string]()
	for _, n := range nodes.Items {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready.Insert(n.Name)
			}
		}
	}
	if want := sets.New(p.Nodes...); len(p.Nodes) != 6 || !ready.IsSuperset(want) {
		t.Fatalf("ready nodes %v, want the 6 sample nodes %v", sets.List(ready), p.Nodes)
	}

	// The sample CRs are there, one per node, and the reporter keeps the NodeMetrics fresh.
	csrs, err := p.Env.Accord.SchedulingV1alpha1().ClusterScopedResources().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(csrs.Items) != len(p.Nodes) {
		t.Fatalf("%d ClusterScopedResources, want one per node (%d)", len(csrs.Items), len(p.Nodes))
	}
	if err := harness.WaitFor(ctx, 15*time.Second, func(ctx context.Context) (bool, error) {
		nms, err := p.Env.Accord.SloV1alpha1().NodeMetrics().List(ctx, metav1.ListOptions{})
		if err != nil || len(nms.Items) != len(p.Nodes) {
			return false, err
		}
		for _, nm := range nms.Items {
			if nm.Status.UpdateTime == nil || time.Since(nm.Status.UpdateTime.Time) > time.Minute || nm.Status.NodeUsage.Cpu().IsZero() {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("NodeMetrics were not reported: %v", err)
	}
	// accord-metrics-reporter wrote them: it owns their status (server-side apply with its field
	// manager) and they belong to their nodes.
	nms, err := p.Env.Accord.SloV1alpha1().NodeMetrics().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, nm := range nms.Items {
		var statusManagers []string
		for _, mf := range nm.ManagedFields {
			if mf.Subresource == "status" {
				statusManagers = append(statusManagers, string(mf.Operation)+" by "+mf.Manager)
			}
		}
		if len(statusManagers) != 1 || statusManagers[0] != "Apply by "+metricsreporter.FieldManager {
			t.Errorf("NodeMetric %s: status managed by %v, want only [Apply by %s]", nm.Name, statusManagers, metricsreporter.FieldManager)
		}
		if len(nm.OwnerReferences) != 1 || nm.OwnerReferences[0].Kind != "Node" || nm.OwnerReferences[0].Name != nm.Name {
			t.Errorf("NodeMetric %s: owner references %v, want its Node", nm.Name, nm.OwnerReferences)
		}
	}

	// accord-scheduler places the sample workloads: memory-hungry only where a ClusterScopedResource
	// enables example.com/memory (node-2, node-5), web never on node-3, which reports 95% CPU.
	placed := map[string]string{}
	if err := harness.WaitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods("demo").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		running := 0
		for _, pod := range pods.Items {
			if pod.Status.Phase == corev1.PodRunning {
				running++
				placed[pod.Name] = pod.Spec.NodeName
			}
		}
		return running == 9, nil
	}); err != nil {
		t.Fatalf("sample workloads not running: %v (placed: %v)", err, placed)
	}
	pods, err := client.CoreV1().Pods("demo").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, pod := range pods.Items {
		if pod.Spec.SchedulerName != "accord-scheduler" {
			t.Errorf("pod %s has scheduler %q, want accord-scheduler", pod.Name, pod.Spec.SchedulerName)
		}
		switch app := pod.Labels["app"]; {
		case app == "memory-hungry" && pod.Spec.NodeName != "node-2" && pod.Spec.NodeName != "node-5":
			t.Errorf("memory-hungry pod %s on %s; only node-2 and node-5 enable example.com/memory", pod.Name, pod.Spec.NodeName)
		case app == "web" && pod.Spec.NodeName == "node-3":
			t.Errorf("web pod %s on node-3, which is over its CPU threshold", pod.Name)
		}
	}

	// The banner's `kubectl accord what-if` example predicts, writing nothing, what the change below
	// then does.
	whatIf, onNode5 := whatIfNode5(ctx, t, p, client)
	moves := predictedMoves(t, whatIf)
	beforeChange := sets.New[string]()
	if pods, err := client.CoreV1().Pods("demo").List(ctx, metav1.ListOptions{LabelSelector: "app=memory-hungry"}); err != nil {
		t.Fatal(err)
	} else {
		for _, pod := range pods.Items {
			if pod.DeletionTimestamp == nil {
				beforeChange.Insert(pod.Name)
			}
		}
	}

	// The two binaries agree: once node-5 stops offering example.com/memory, accord-descheduler evicts
	// the memory-hungry pods there and accord-scheduler places their replacements on node-2.
	_, err = p.Env.Accord.SchedulingV1alpha1().ClusterScopedResources().Patch(ctx, "node-5", types.MergePatchType,
		[]byte(`{"spec":{"resourcesFilter":{"example.com/memory":false}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitFor(ctx, 45*time.Second, func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods("demo").List(ctx, metav1.ListOptions{LabelSelector: "app=memory-hungry"})
		if err != nil {
			return false, err
		}
		onNode2 := 0
		for _, pod := range pods.Items {
			// Evicted pods stay Terminating for their grace period (the node simulator honours it).
			if pod.Spec.NodeName == "node-5" && pod.DeletionTimestamp == nil {
				return false, nil
			}
			if pod.Spec.NodeName == "node-2" && pod.Status.Phase == corev1.PodRunning {
				onNode2++
			}
		}
		return onNode2 == 3, nil
	}); err != nil {
		t.Fatalf("memory-hungry pods did not move off node-5 to node-2: %v", err)
	}
	checkWhatIfCameTrue(ctx, t, client, moves, onNode5, beforeChange)
	// They moved reservation-first (the playground policy's ReservationFirst): Reservations on
	// node-2, each consumed (Bound) by a replacement.
	if err := harness.WaitFor(ctx, 15*time.Second, func(ctx context.Context) (bool, error) {
		rsvs, err := p.Env.Accord.SchedulingV1alpha1().Reservations("demo").List(ctx, metav1.ListOptions{})
		if err != nil || len(rsvs.Items) == 0 {
			return false, err
		}
		for _, r := range rsvs.Items {
			if r.Status.Phase != schedv1alpha1.ReservationBound || r.Status.NodeName != "node-2" {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Errorf("the memory-hungry pods did not move through Reservations on node-2 bound by their replacements: %v", err)
	}
	// `kubectl accord why` for an evicted pod, gone: the plugin, the predicted node, the replacement.
	checkWhyEvicted(ctx, t, p, client, moves, onNode5)
	// The how-to's migrations (migrationHowTo's steps, through the API): two web pods moved at once, to node-4 and
	// node-6, reservation-first, while a burst of 8 under-requested pods arrives.
	checkTwoMigrationsAndABurst(ctx, t, p, client)

	// A Deployment's pods, bound to a node by hand, run; an evicted pod is recreated by its ReplicaSet.
	ns := "playground-test"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "hand-bound"}
	_, err = client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "hand-bound"},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(3)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0),
					// No scheduler serves this name: the test binds the pods itself.
					SchedulerName: "bound-by-hand",
					Containers:    []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
				},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	running := waitForRunningPods(ctx, t, client, ns, 3, p.Nodes[0])
	victim := running[0]
	err = client.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: victim.Name, Namespace: ns}})
	if err != nil {
		t.Fatalf("evicting %s: %v", victim.Name, err)
	}
	after := waitForRunningPods(ctx, t, client, ns, 3, p.Nodes[1])
	names := sets.New[string]()
	for _, pod := range after {
		names.Insert(pod.Name)
	}
	if names.Has(victim.Name) {
		t.Fatalf("evicted pod %s is still running", victim.Name)
	}
	if _, err := client.CoreV1().Pods(ns).Get(ctx, victim.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("evicted pod %s: get returned %v, want NotFound", victim.Name, err)
	}

	// The load is simulated at the source: a node's usage in metrics.k8s.io is its baseline annotation
	// + its running pods' requests. Cooling node-3 shows in its NodeMetric within a few report
	// intervals (5 s in the playground's reporter config).
	start := time.Now()
	_, err = client.CoreV1().Nodes().Patch(ctx, "node-3", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+playground.BaselineUsageAnnotation+`":"{\"cpu\":\"1\",\"memory\":\"4Gi\"}"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got, want corev1.ResourceList
	if err := harness.WaitFor(ctx, 4*5*time.Second, func(ctx context.Context) (bool, error) {
		nm, err := p.Env.Accord.SloV1alpha1().NodeMetrics().Get(ctx, "node-3", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node-3,status.phase=Running"})
		if err != nil {
			return false, err
		}
		want = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("4Gi")}
		for _, pod := range pods.Items {
			for _, c := range pod.Spec.Containers {
				for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
					q := want[r]
					q.Add(c.Resources.Requests[r])
					want[r] = q
				}
			}
		}
		got = nm.Status.NodeUsage
		return got.Cpu().Cmp(*want.Cpu()) == 0 && got.Memory().Cmp(*want.Memory()) == 0, nil
	}); err != nil {
		t.Fatalf("node-3's NodeMetric did not follow its new baseline: usage %v, want %v: %v", got, want, err)
	}
	t.Logf("node-3's NodeMetric followed its new baseline after %v: usage %v", time.Since(start).Round(100*time.Millisecond), got)

	// After Stop the apiserver's port is free again.
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	l, err := net.Listen("tcp", u.Host)
	if err != nil {
		t.Fatalf("apiserver port %s still in use after Stop: %v", u.Host, err)
	}
	_ = l.Close()
}

// checkTwoMigrationsAndABurst runs the playground's how-to for reservations: two PodMigrations
// created at once (pod A, the first web pod not on node-4, to node-4; pod B, the first other web pod
// not on node-6, to node-6) and the under-requested Deployment scaled to 8 in the same breath. Both
// reservations are made for their pod (name and UID), seen Available and then Bound, each by a
// distinct replacement (a new web pod: the ReplicaSet's pods are interchangeable) bound on that
// reservation's node; the burst's pods are bound too; and the console's Pod migrations table shows
// each replacement on its reservation's node.
func checkTwoMigrationsAndABurst(ctx context.Context, t *testing.T, p *playground.Playground, client kubernetes.Interface) {
	t.Helper()
	accord := p.Env.Accord.SchedulingV1alpha1()
	// Every phase each reservation of demo goes through, from a watch opened before the migrations.
	rsvs, err := accord.Reservations("demo").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := accord.Reservations("demo").Watch(ctx, metav1.ListOptions{ResourceVersion: rsvs.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	phases := map[string][]schedv1alpha1.ReservationPhase{}
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for ev := range w.ResultChan() {
			if r, ok := ev.Object.(*schedv1alpha1.Reservation); ok {
				mu.Lock()
				if seen := phases[r.Name]; len(seen) == 0 || seen[len(seen)-1] != r.Status.Phase {
					phases[r.Name] = append(seen, r.Status.Phase)
				}
				mu.Unlock()
			}
		}
	}()

	firstWeb := func(notOn, notNamed string) string {
		webs, err := client.CoreV1().Pods("demo").List(ctx, metav1.ListOptions{LabelSelector: "app=web", FieldSelector: "spec.nodeName!=" + notOn})
		if err != nil {
			t.Fatal(err)
		}
		for _, pod := range webs.Items {
			if pod.Name != notNamed && pod.DeletionTimestamp == nil {
				return pod.Name
			}
		}
		t.Fatalf("no web pod off %s but %q", notOn, notNamed)
		return ""
	}
	a := firstWeb("node-4", "")
	b := firstWeb("node-6", a)
	targets := map[string]string{a: "node-4", b: "node-6"}
	var pms []*schedv1alpha1.PodMigration
	for _, pod := range []string{a, b} {
		pm, err := accord.PodMigrations("demo").Create(ctx, &schedv1alpha1.PodMigration{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "move-"},
			Spec:       schedv1alpha1.PodMigrationSpec{PodName: pod, TargetNode: targets[pod]}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pms = append(pms, pm)
	}
	const burst = 8
	if _, err := client.AppsV1().Deployments("demo").Patch(ctx, "under-requested", types.MergePatchType,
		[]byte(`{"spec":{"replicas":8}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	if err := harness.WaitFor(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		for i := range pms {
			pm, err := accord.PodMigrations("demo").Get(ctx, pms[i].Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			pms[i] = pm
		}
		return pms[0].Status.Phase.Finished() && pms[1].Status.Phase.Finished(), nil
	}); err != nil {
		t.Fatalf("the two PodMigrations did not finish: %v (%+v; %+v)", err, pms[0].Status, pms[1].Status)
	}
	t.Logf("two PodMigrations with a burst of %d pods finished after %v", burst, time.Since(start).Round(100*time.Millisecond))

	replacements := sets.New[string]()
	for _, pm := range pms {
		target := targets[pm.Spec.PodName]
		if pm.Status.Phase != schedv1alpha1.PodMigrationSucceeded || pm.Status.ReservationName == "" {
			t.Errorf("PodMigration %s of %s to %s: status %+v, want Succeeded through a reservation", pm.Name, pm.Spec.PodName, target, pm.Status)
			continue
		}
		r, err := accord.Reservations("demo").Get(ctx, pm.Status.ReservationName, metav1.GetOptions{})
		if err != nil {
			t.Errorf("reservation %s of PodMigration %s: %v", pm.Status.ReservationName, pm.Name, err)
			continue
		}
		if r.Status.Phase != schedv1alpha1.ReservationBound || r.Status.NodeName != target || r.Status.BoundPod == nil {
			t.Errorf("reservation %s of %s: %s on %q bound by %+v, want Bound on %s", r.Name, pm.Spec.PodName, r.Status.Phase, r.Status.NodeName, r.Status.BoundPod, target)
			continue
		}
		if !slices.ContainsFunc(r.Spec.Owners, func(o schedv1alpha1.ReservationOwner) bool {
			return o.Pod != nil && o.Pod.Name == pm.Spec.PodName && o.Pod.UID == pm.Status.PodUID
		}) {
			t.Errorf("reservation %s: owners %+v, want it made for pod %s (UID %s)", r.Name, r.Spec.Owners, pm.Spec.PodName, pm.Status.PodUID)
		}
		replacement, err := client.CoreV1().Pods("demo").Get(ctx, r.Status.BoundPod.Name, metav1.GetOptions{})
		switch {
		case err != nil:
			t.Errorf("replacement %s of reservation %s: %v", r.Status.BoundPod.Name, r.Name, err)
		case replacement.UID != r.Status.BoundPod.UID || replacement.UID == pm.Status.PodUID || replacement.Spec.NodeName != r.Status.NodeName:
			t.Errorf("replacement %s (UID %s) of reservation %s is bound on %q, want a new pod (UID %s) on the reservation's node %s",
				replacement.Name, replacement.UID, r.Name, replacement.Spec.NodeName, r.Status.BoundPod.UID, r.Status.NodeName)
		case pm.Status.ReplacementPod != replacement.Name:
			t.Errorf("PodMigration %s names replacement %q, its reservation %s was consumed by %s", pm.Name, pm.Status.ReplacementPod, r.Name, replacement.Name)
		}
		replacements.Insert(r.Status.BoundPod.Name)
		mu.Lock()
		seen := phases[r.Name]
		mu.Unlock()
		if i := slices.Index(seen, schedv1alpha1.ReservationAvailable); i < 0 || !slices.Contains(seen[i:], schedv1alpha1.ReservationBound) {
			t.Errorf("reservation %s went through %v, want Available, then Bound", r.Name, seen)
		}
		t.Logf("%s: %s moved from %s through reservation %s (phases %q) into %s on %s", pm.Name, pm.Spec.PodName, pm.Status.SourceNode, r.Name, seen, replacement.Name, replacement.Spec.NodeName)
	}
	if replacements.Len() != 2 {
		t.Errorf("the two reservations were consumed by %v, want two distinct replacements", sets.List(replacements))
	}

	// The burst competed for the room: its pods were created with the migrations and are all bound.
	perNode := map[string]int{}
	if err := harness.WaitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods("demo").List(ctx, metav1.ListOptions{LabelSelector: "app=under-requested"})
		if err != nil {
			return false, err
		}
		clear(perNode)
		for _, pod := range pods.Items {
			if pod.Spec.NodeName != "" {
				perNode[pod.Spec.NodeName]++
			}
		}
		return len(pods.Items) == burst && perNode[""] == 0 && sum(perNode) == burst, nil
	}); err != nil {
		t.Errorf("the burst of %d under-requested pods is not all bound: %v (per node: %v)", burst, err, perNode)
	}
	t.Logf("the burst's pods per node: %v", perNode)

	// The console's Pod migrations table shows each migration's reservation node (To) and its
	// replacement on that node; its evictions table shows each moved pod's replacement there too.
	var view struct {
		Migrations []console.MigrationView `json:"migrations"`
		Evictions  []console.Eviction      `json:"evictions"`
	}
	rows := map[string]console.MigrationView{}
	evicted := map[string]console.Eviction{}
	if err := harness.WaitFor(ctx, 15*time.Second, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.ConsoleURL+"/api/state", nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		defer func() { _ = resp.Body.Close() }()
		if resp.StatusCode != http.StatusOK {
			return false, nil
		}
		if err := json.NewDecoder(resp.Body).Decode(&view); err != nil {
			return false, err
		}
		clear(rows)
		for _, m := range view.Migrations {
			rows[m.Name] = m
		}
		clear(evicted)
		for _, e := range view.Evictions {
			if e.Plugin == "PodMigration" {
				evicted[e.Pod] = e
			}
		}
		for _, pm := range pms {
			row := rows[pm.Name]
			if row.Phase != string(schedv1alpha1.PodMigrationSucceeded) || row.Replacement == "" || evicted[pm.Spec.PodName].Replacement == "" {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Errorf("the console does not show the two migrations Succeeded with their evictions: %v (rows %+v, evictions %+v)", err, rows, evicted)
	}
	for _, pm := range pms {
		row, target := rows[pm.Name], targets[pm.Spec.PodName]
		if row.Reservation != pm.Status.ReservationName || row.TargetNode != target || row.Replacement != pm.Status.ReplacementPod || row.ReplacementNode != target {
			t.Errorf("console row of %s: reservation %q on %q, replacement %q on %q; want reservation %s on %s, replacement %s on %s",
				pm.Name, row.Reservation, row.TargetNode, row.Replacement, row.ReplacementNode, pm.Status.ReservationName, target, pm.Status.ReplacementPod, target)
		}
		if e := evicted[pm.Spec.PodName]; e.Replacement != pm.Status.ReplacementPod || e.ReplacementNode != target {
			t.Errorf("console eviction of %s: replacement %q on %q, want %s on %s", pm.Spec.PodName, e.Replacement, e.ReplacementNode, pm.Status.ReplacementPod, target)
		}
	}
	w.Stop()
	<-watched
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// waitForRunningPods binds every unbound pod of ns to node, as a scheduler would, and waits until
// exactly want pods are Running and none is terminating.
func waitForRunningPods(ctx context.Context, t *testing.T, client kubernetes.Interface, ns string, want int, node string) []corev1.Pod {
	t.Helper()
	var running []corev1.Pod
	err := harness.WaitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		running = running[:0]
		for _, pod := range pods.Items {
			if pod.DeletionTimestamp != nil {
				return false, nil
			}
			if pod.Spec.NodeName == "" {
				err := client.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{
					ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: ns, UID: pod.UID},
					Target:     corev1.ObjectReference{Kind: "Node", Name: node},
				}, metav1.CreateOptions{})
				if err != nil && !apierrors.IsConflict(err) {
					return false, err
				}
				continue
			}
			if pod.Status.Phase == corev1.PodRunning {
				running = append(running, pod)
			}
		}
		return len(running) == want && len(pods.Items) == want, nil
	})
	if err != nil {
		t.Fatalf("waiting for %d running pods in %s: %v (running: %d)", want, ns, err, len(running))
	}
	return running
}
