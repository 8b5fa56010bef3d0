package simulation

import (
	"context"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/descheduler/evictions"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/reservationfirst"
	"github.com/accord-sched/accord/pkg/scheduler/plugins/reservation"
)

// Result is one run: its trace (one line per step and per clock tick with something in it) and the
// first broken invariant.
type Result struct {
	Trace   []string
	Err     error
	Steps   int
	Checks  int
	Summary string
	counts  summary
}

// Run runs the actions against a new cluster in a synctest bubble (its fake clock starts at
// cfg.Start) and checks the invariants after every step and every clock tick.
func Run(t *testing.T, cfg Config, actions []Action) Result {
	var res Result
	synctest.Test(t, func(t *testing.T) {
		res = run(cfg, actions)
	})
	return res
}

func run(cfg Config, actions []Action) (res Result) {
	loc, err := time.LoadLocation(cfg.Zone)
	if err != nil {
		return Result{Err: err}
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &world{cfg: cfg, loc: loc, epoch: time.Now(), ctx: ctx, cancel: cancel}
	defer func() {
		if r := recover(); r != nil {
			res.Err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
		w.close()
		res.Trace = w.trace
		res.Checks = w.invariantChecks
		if res.Err == nil && w.violation != "" {
			res.Err = &violationError{w.violation}
		}
		res.counts = summary{evicted: w.evicted, soft: w.softened, background: w.background}
		res.Summary = fmt.Sprintf("evicted %d, soft %d, background %d, refused %d, descheduler instances %d, invariant checks %d",
			w.evicted, w.softened, w.background, w.refused, w.gen, w.invariantChecks)
	}()
	if err := w.setup(); err != nil {
		return Result{Err: err}
	}
	w.flush("start " + cfg.String())
	if err := w.check(); err != nil {
		return Result{Err: err}
	}
	for i, a := range actions {
		res.Steps = i + 1
		if err := w.do(a); err != nil {
			return Result{Err: fmt.Errorf("step %d (%s): %w", i+1, a, err), Steps: i + 1}
		}
	}
	return res
}

func (c Config) String() string {
	var ws []string
	for i, wl := range c.Workloads {
		s := fmt.Sprintf("w%d:%s/%d", i, wl.Namespace, wl.Replicas)
		if wl.GPU {
			s += "/gpu"
		}
		if wl.VM {
			s += "/vm"
		}
		if wl.PDB != nil {
			s += "/pdb:" + wl.PDB.String()
		}
		ws = append(ws, s)
	}
	s := fmt.Sprintf("zone=%s start=%s window=%v eventOnly=%t soft=%t background=%t perNode=%d maxMigrating=%d schedulerSimulation=%t singleReplica=%t podsWithoutPDB=%t reservationFirst=%t nodes=%d workloads=[%s]",
		c.Zone, c.Start.Format(time.RFC3339), c.Window, c.EventOnly, c.Soft, c.Background, c.PerNode, c.MaxMigrating,
		c.SchedulerSimulation, c.SingleReplica, c.PodsWithoutPDB, c.ReservationFirst, c.Nodes, strings.Join(ws, " "))
	if c.Metrics != nil {
		s += " " + c.Metrics.String()
	}
	return s
}

// do runs one action, lets the cluster settle and checks the invariants.
func (w *world) do(a Action) error {
	desc := a.String()
	if (a.Kind == "cr" || a.Kind == "deleteNode" || a.Kind == "taint" || a.Kind == "hot" || a.Kind == "cool") && len(w.nodes) > 0 {
		// The node the index names now.
		desc = strings.Replace(desc, fmt.Sprintf("node%d", a.I), w.nodes[a.I%len(w.nodes)], 1)
	}
	switch a.Kind {
	case "cr", "burst", "deletePod", "deleteNode", "taint":
		// What may leave a pod without a place (no-pod-lost holds while the cluster is unchanged).
		w.mu.Lock()
		w.churn++
		w.mu.Unlock()
	}
	switch a.Kind {
	case "advance":
		w.flush(a.String())
		return w.advance(a.D)
	case "cr":
		if len(w.nodes) == 0 {
			break
		}
		node := w.nodes[a.I%len(w.nodes)]
		cr := w.cr(node)
		if cr == nil {
			break
		}
		cr = cr.DeepCopy()
		if cr.Spec.ResourcesFilter[gpu] == a.B {
			break
		}
		cr.Spec.ResourcesFilter[gpu] = a.B
		if err := w.ac.Tracker().Update(crGVR, cr, ""); err != nil {
			return err
		}
		onNode := map[types.UID]bool{}
		for _, p := range w.pods() {
			if p.Spec.NodeName == node {
				onNode[p.UID] = true
			}
		}
		w.mu.Lock()
		w.crChanged[node] = crChange{at: w.now(), gen: w.gen, pods: onNode}
		if a.B {
			w.offeredAt = w.now()
		}
		w.mu.Unlock()
	case "burst":
		wl := workloadName(a.I % len(w.cfg.Workloads))
		w.replicas[wl] += a.N
		if err := w.scale(wl); err != nil {
			return err
		}
	case "deletePod":
		wl := workloadName(a.I % len(w.cfg.Workloads))
		var of []*corev1.Pod
		for _, p := range w.pods() {
			if workloadOf(p) == wl && p.DeletionTimestamp == nil {
				of = append(of, p)
			}
		}
		if len(of) == 0 {
			break
		}
		p := of[a.N%len(of)].DeepCopy()
		p.DeletionTimestamp = ptrTo(metav1.NewTime(time.Now()))
		grace := int64(a.D / time.Second)
		p.DeletionGracePeriodSeconds = &grace
		if err := w.kc.Tracker().Update(podsGVR, p, p.Namespace); err != nil {
			return err
		}
		w.mu.Lock()
		w.terminating[p.UID] = time.Now().Add(a.D)
		w.mu.Unlock()
	case "addNode":
		if err := w.addNode(a.B); err != nil {
			return err
		}
	case "deleteNode":
		if len(w.nodes) <= 2 {
			break
		}
		i := a.I % len(w.nodes)
		node := w.nodes[i]
		w.nodes = append(w.nodes[:i:i], w.nodes[i+1:]...)
		if err := w.kc.Tracker().Delete(nodesGVR, "", node); err != nil {
			return err
		}
		// The node's ClusterScopedResource goes after the node has gone from every informer (the
		// garbage collector deletes it, as the pods, once the node is gone): with both deleted at
		// once, NodeCRDResourceFit's controller, queued by the CR's deletion, found the node still in
		// its lister in one run and evicted its pods, and found it gone in another.
		synctest.Wait()
		if err := w.ac.Tracker().Delete(crGVR, "", node); err != nil {
			return err
		}
		// The pod garbage collector removes the pods of a node that is gone, after the node is gone:
		// the descheduler's handlers of the Node and ClusterScopedResource deletions run to the end
		// first. Removing the pods while they ran let a controller's eviction of a pod of the node
		// reach the cluster before that pod's removal in one run and after it in another (seed 4 of
		// TestSeedReproducesTrace: "deleteNode node3: pdb:w2-5" in one run of two).
		synctest.Wait()
		for _, p := range w.pods() {
			if p.Spec.NodeName == node {
				w.remove(p)
			}
		}
	case "taint":
		if len(w.nodes) == 0 {
			break
		}
		node := w.nodes[a.I%len(w.nodes)]
		obj, err := w.kc.Tracker().Get(nodesGVR, "", node)
		if err != nil {
			return err
		}
		n := obj.(*corev1.Node).DeepCopy()
		if len(n.Spec.Taints) == 0 {
			n.Spec.Taints = []corev1.Taint{{Key: "sim.accord.dev/maintenance", Effect: corev1.TaintEffectNoSchedule}}
		} else {
			n.Spec.Taints = nil
		}
		if err := w.kc.Tracker().Update(nodesGVR, n, ""); err != nil {
			return err
		}
	case "answers":
		// Each pod of the workload (by name) gets its own answer for its next eviction request:
		// the descheduler's requests overlap, so answers taken in arrival order would not replay.
		wl := workloadName(a.I % len(w.cfg.Workloads))
		j := 0
		w.mu.Lock()
		for _, p := range w.pods() {
			if workloadOf(p) == wl {
				w.answers[p.UID] = append(w.answers[p.UID], a.Answers[j%len(a.Answers)])
				j++
			}
		}
		w.mu.Unlock()
	case "restart":
		if err := w.restart(); err != nil {
			return err
		}
	case "migrate":
		// A user asks the descheduler (PodMigration, enabled with ReservationFirst) to move a pod.
		if !w.cfg.ReservationFirst {
			break
		}
		wl := workloadName(a.I % len(w.cfg.Workloads))
		var of []*corev1.Pod
		for _, p := range w.pods() {
			if workloadOf(p) == wl && p.DeletionTimestamp == nil && p.Spec.NodeName != "" {
				of = append(of, p)
			}
		}
		if len(of) == 0 {
			break
		}
		p := of[a.N%len(of)]
		w.pmSeq++
		pm := &schedv1alpha1.PodMigration{
			ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: fmt.Sprintf("pm-%d", w.pmSeq), UID: types.UID(fmt.Sprintf("uid-pm-%d", w.pmSeq)),
				CreationTimestamp: metav1.NewTime(time.Now().Truncate(time.Second))},
			Spec: schedv1alpha1.PodMigrationSpec{PodName: p.Name, Mode: schedv1alpha1.PodMigrationReservationFirst},
		}
		if a.B {
			pm.Spec.Mode = schedv1alpha1.PodMigrationEvictDirectly
		}
		if err := w.ac.Tracker().Create(pmGVR, pm, pm.Namespace); err != nil {
			return err
		}
		desc += fmt.Sprintf(" (%s: %s)", pm.Name, p.Name)
	case "leader":
		// The leader loses its lease (a partition, a drained node): it stops, and no replica leads
		// until another takes the lease over. B: accord-scheduler's leader (its reservation placer
		// and collector; the placement of pods goes on), else accord-descheduler's.
		if a.B && w.cfg.ReservationFirst {
			w.stopPlacer()
			time.Sleep(leaseGap)
			w.reconcile()
			if err := w.startPlacer(w.schedCfg); err != nil {
				return err
			}
			break
		}
		w.stopDescheduler()
		time.Sleep(leaseGap)
		w.reconcile()
		if err := w.startDescheduler(); err != nil {
			return err
		}
	case "hot", "cool", "reporter":
		w.doMetrics(a)
	default:
		return fmt.Errorf("unknown action %q", a.Kind)
	}
	w.reconcile()
	w.flush(desc)
	return w.check()
}

func (w *world) scale(wl string) error {
	obj, err := w.kc.Tracker().Get(rsGVR, w.cfg.Workloads[mustIndex(wl)].Namespace, wl)
	if err != nil {
		return err
	}
	rs := obj.(*appsv1.ReplicaSet).DeepCopy()
	rs.Spec.Replicas = ptrTo(int32(w.replicas[wl]))
	return w.kc.Tracker().Update(rsGVR, rs, rs.Namespace)
}

func mustIndex(wl string) int {
	i, err := strconv.Atoi(strings.TrimPrefix(wl, "w"))
	if err != nil {
		panic(err)
	}
	return i
}

// advance runs the fake clock for d, stopping at least every tick, and just before and after each
// window edge (and openGrace after each opening) to check the invariants there.
func (w *world) advance(d time.Duration) error {
	target := w.now().Add(d)
	for w.now().Before(target) {
		now := w.now()
		next := now.Add(tick)
		if next.After(target) {
			next = target
		}
		if w.cfg.Window != nil {
			for _, e := range w.edges(now.Add(-openGrace), next.Add(openGrace)) {
				for _, c := range []time.Time{e.at.Add(-time.Second), e.at.Add(time.Second), e.at.Add(openGrace)} {
					if c.After(now) && c.Before(next) && (e.open || c != e.at.Add(openGrace)) {
						next = c
					}
				}
			}
		}
		time.Sleep(next.Sub(now))
		w.reconcile()
		if err := w.check(); err != nil {
			return err
		}
		w.mu.Lock()
		pending := len(w.stepLog) > 0
		w.mu.Unlock()
		if pending {
			w.flush("tick")
		}
	}
	return nil
}

// --- windows: the oracle --------------------------------------------------------------------------

func clock(s string) (h, m int) {
	hh, mm, _ := strings.Cut(s, ":")
	h, _ = strconv.Atoi(hh)
	m, _ = strconv.Atoi(mm)
	return h, m
}

// windowOpen is the README's promise: the window is open from its start to its end at the
// wall-clock times of its zone (each day's start and end read with time.Date in the zone).
func (w *world) windowOpen(t time.Time) bool {
	for _, e := range w.spans(t.Add(-48*time.Hour), t.Add(48*time.Hour)) {
		if !t.Before(e[0]) && t.Before(e[1]) {
			return true
		}
	}
	return false
}

// spans are the window's [open, close) intervals of the days around [from, to].
func (w *world) spans(from, to time.Time) [][2]time.Time {
	sh, sm := clock(w.cfg.Window[0])
	eh, em := clock(w.cfg.Window[1])
	var out [][2]time.Time
	lf := from.In(w.loc).AddDate(0, 0, -1)
	for day := time.Date(lf.Year(), lf.Month(), lf.Day(), 12, 0, 0, 0, w.loc); !day.After(to.In(w.loc).AddDate(0, 0, 1)); day = day.AddDate(0, 0, 1) {
		y, m, d := day.Date()
		open := time.Date(y, m, d, sh, sm, 0, 0, w.loc)
		endDay := d
		if eh*60+em <= sh*60+sm {
			endDay++
		}
		out = append(out, [2]time.Time{open, time.Date(y, m, endDay, eh, em, 0, 0, w.loc)})
	}
	return out
}

type edge struct {
	at   time.Time
	open bool
}

// edges are the window's openings and closings in (from, to].
func (w *world) edges(from, to time.Time) []edge {
	var out []edge
	for _, s := range w.spans(from, to) {
		if s[0].After(from) && !s[0].After(to) {
			out = append(out, edge{s[0], true})
		}
		if s[1].After(from) && !s[1].After(to) {
			out = append(out, edge{s[1], false})
		}
	}
	return out
}

// lastOpening is the window's last opening at or before t.
func (w *world) lastOpening(t time.Time) time.Time {
	var last time.Time
	for _, s := range w.spans(t.Add(-48*time.Hour), t) {
		if !s[0].After(t) && s[0].After(last) {
			last = s[0]
		}
	}
	return last
}

// --- the invariants checked after every step ------------------------------------------------------

func (w *world) check() error {
	w.invariantChecks++
	w.mu.Lock()
	v := w.violation
	w.mu.Unlock()
	if v != "" {
		return &violationError{v}
	}
	checks := []func() string{w.checkWindow, w.checkReservations, w.checkNoLeak, w.checkWindowLiveness, w.checkSoftCleared, w.checkNoPodLost, w.checkMigrationsEnd}
	for _, c := range checks {
		if msg := c(); msg != "" {
			return &violationError{fmt.Sprintf("[%s] %s", w.now().In(w.loc).Format("2006-01-02 15:04:05 MST"), msg)}
		}
	}
	return nil
}

func (w *world) profileEvictor() *evictions.ProfileEvictor {
	return w.d.d.Profiles()[0].Evictor().(*evictions.ProfileEvictor)
}

// checkWindow: the profile's windows are open exactly when the oracle says.
func (w *world) checkWindow() string {
	if w.cfg.Window == nil || w.d == nil {
		return ""
	}
	now := w.now()
	got, _ := w.profileEvictor().Windows.Open(now)
	if want := w.windowOpen(now); got != want {
		return fmt.Sprintf("invariant window: the descheduler's window %s-%s %s is open=%t at %s local time; it is open=%t at the wall-clock times of its zone",
			w.cfg.Window[0], w.cfg.Window[1], w.cfg.Zone, got, now.In(w.loc).Format("2006-01-02 15:04:05 MST"), want)
	}
	return ""
}

// checkNoLeak: once nothing of a workload is in progress (all its replicas Ready, no pod terminating,
// annotated or migrating, every eviction of it replaced), its budget counts nothing; and the tracker
// of evictions in progress counts exactly the pods annotated in progress.
func (w *world) checkNoLeak() string {
	if w.d == nil {
		return ""
	}
	pods := w.pods()
	waiting := w.awaitingPlacement(pods)
	// A VM's eviction in background is assumed in progress from before its request, which a
	// reservation-first eviction sends once the reservation is placed.
	marked, assumed := 0, 0
	for _, p := range pods {
		_, evictOnly := p.Annotations[evictions.RequestEvictOnlyAnnotation]
		switch {
		case w.inProgress(p):
			marked++
		case w.cfg.Background && evictOnly && waiting[p.UID]:
			assumed++
		}
	}
	if total, _, _ := w.d.d.Limiter().InProgress().Counts("", ""); total < marked || total > marked+assumed {
		return fmt.Sprintf("invariant in-progress: the descheduler counts %d evictions in progress; %d pods are annotated in progress (and %d may be assumed, their reservation not yet placed)", total, marked, assumed)
	}
	// Idle but for the reservation-first evictions that wait for their reservation to be placed.
	if n := w.d.d.Limiter().InFlight(); n > len(waiting) {
		var rs []string
		for _, r := range w.reservations() {
			w.mu.Lock()
			rs = append(rs, fmt.Sprintf("%s %q gen %d", r.Name, r.Status.Phase, w.rsvGen[r.Namespace+"/"+r.Name]))
			w.mu.Unlock()
		}
		return fmt.Sprintf("invariant in-flight: %d evictions in flight while the descheduler is idle (%d may wait for their reservation to be placed; reservations: %v)", n, len(waiting), rs)
	}
	budget := w.d.d.Limiter().Budget()
	w.mu.Lock()
	outstanding := map[string]int{}
	for _, s := range w.started {
		outstanding[s.workload]++
	}
	w.mu.Unlock()
	for i := range w.cfg.Workloads {
		wl := workloadName(i)
		if w.replicas[wl] <= 1 || outstanding[wl] > 0 {
			continue
		}
		var of []*corev1.Pod
		still := true
		for _, p := range pods {
			if workloadOf(p) != wl {
				continue
			}
			of = append(of, p)
			if !ready(p) || w.inProgress(p) || softAnnotated(p) || waiting[p.UID] {
				still = false
			}
		}
		if !still || len(of) != w.replicas[wl] {
			continue
		}
		_ = budget.Check(of[0]) // forgets the replaced evictions
		if n := budget.Migrating(types.UID("uid-" + wl)); n != 0 {
			return fmt.Sprintf("invariant budget-leak: %s has all %d replicas Ready and nothing in progress, but its budget still counts %d migrating (maxMigratingPerWorkload %d)",
				wl, w.replicas[wl], n, w.maxMigrating(wl))
		}
	}
	return ""
}

// checkWindowLiveness (event-only mode with a window): a node whose CR changed, making pods
// violators, while the window was closed gets an eviction attempt within openGrace of the window
// opening, unless the caps, the budget or the scheduler hold all its violators. A violator the
// scheduler held (nowhere to go) is tried within openGrace of the window's opening or of a CR
// starting to offer a resource, whichever let it move (the controller retries its held nodes on
// both), or, when room appeared otherwise (a pod gone), within the back-off's cap.
func (w *world) checkWindowLiveness() string {
	if !w.cfg.EventOnly || w.cfg.Window == nil || w.d == nil {
		return ""
	}
	now := w.now()
	if !w.windowOpen(now) {
		clear(w.movableSince)
		return ""
	}
	opened := w.lastOpening(now)
	if now.Sub(opened) < openGrace {
		return ""
	}
	last := w.livenessAt
	w.livenessAt = now
	lim, budget := w.d.d.Limiter(), w.d.d.Limiter().Budget()
	for _, node := range w.nodes {
		w.mu.Lock()
		ch, changed := w.crChanged[node]
		attempt := w.attempts[node]
		w.mu.Unlock()
		if !changed || ch.gen != w.gen || !ch.at.Before(opened) || !attempt.Before(opened) {
			continue
		}
		for _, p := range w.pods() {
			if p.Spec.NodeName != node || !ch.pods[p.UID] || p.DeletionTimestamp != nil || w.inProgress(p) || !w.violates(p) || w.protectedWithoutPDB(p) {
				continue
			}
			if lim.Check(node, p.Namespace) != nil || budget.Check(p) != nil {
				delete(w.movableSince, p.UID)
				continue
			}
			if w.cfg.SchedulerSimulation {
				if pred, err := w.sched.Predict(w.ctx, p); err != nil || !pred.Moves() {
					delete(w.movableSince, p.UID)
					continue
				}
				since, seen := w.movableSince[p.UID]
				if !seen {
					// First seen movable: at the opening if the last look was before it.
					since = now
					if last.Before(opened) {
						since = opened
					}
					w.movableSince[p.UID] = since
				}
				if since.After(opened) && !since.Equal(w.offeredAt) && now.Sub(since) < backoffCap+openGrace {
					continue
				}
			}
			return fmt.Sprintf("invariant window-opens-on-time: the window opened at %s; %s later violator %s on %s (its CR changed at %s, window closed) has had no eviction attempt though caps and budget allow one",
				opened.In(w.loc).Format("15:04:05 MST"), now.Sub(opened), p.Name, node, ch.at.In(w.loc).Format("15:04:05 MST"))
		}
	}
	return ""
}

// checkSoftCleared (periodic mode, Soft profile): the annotation of a pod that no longer violates
// is removed within two cycles.
func (w *world) checkSoftCleared() string {
	if !w.cfg.Soft || w.cfg.EventOnly || w.d == nil {
		return ""
	}
	now := w.now()
	if w.fitSince == nil {
		w.fitSince = map[types.UID]time.Time{}
	}
	for _, p := range w.pods() {
		if !softAnnotated(p) || p.DeletionTimestamp != nil || w.violates(p) {
			delete(w.fitSince, p.UID)
			continue
		}
		since, ok := w.fitSince[p.UID]
		if !ok {
			w.fitSince[p.UID] = now
			continue
		}
		if now.Sub(since) > 2*cycleInterval+tick {
			return fmt.Sprintf("invariant soft-annotation-cleared: %s has kept its soft-eviction annotation %s after it stopped violating", p.Name, now.Sub(since))
		}
	}
	return ""
}

// checkReservations (ReservationFirst; reservation-taken-by-sibling is checked as the placer writes
// Bound): no reservation holds room, or waits to be placed, past its expiry (the placer moves it on at its expireTime; a tick of slack, and a lease gap for a change of
// the scheduler's leader).
func (w *world) checkReservations() string {
	if !w.cfg.ReservationFirst {
		return ""
	}
	now := time.Now()
	for _, r := range w.reservations() {
		live := r.Status.Phase == "" || r.Status.Phase == schedv1alpha1.ReservationPending || r.Status.Phase == schedv1alpha1.ReservationAvailable
		if exp := reservation.ExpireTime(r); live && now.After(exp.Add(tick+leaseGap)) {
			return fmt.Sprintf("invariant reservation-ttl: reservation %s/%s is %q (node %q) %s after its expiry",
				r.Namespace, r.Name, r.Status.Phase, r.Status.NodeName, now.Sub(exp))
		}
	}
	return ""
}

// awaitingPlacement are the pods whose reservation-first eviction may be under way: the current
// descheduler made a reservation for the pod, and the pod is not terminating (the plugin polls the
// reservation every 100 ms and deletes it on every path that does not evict; a reservation Bound to
// a sibling once the pod is gone is seen at the next poll; a pod deleted meanwhile is noticed only
// at the eviction).
func (w *world) awaitingPlacement(pods []*corev1.Pod) map[types.UID]bool {
	waiting := map[types.UID]bool{}
	if !w.cfg.ReservationFirst {
		return waiting
	}
	terminating := map[string]bool{}
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			terminating[string(p.UID)] = true
		}
	}
	for _, r := range w.reservations() {
		uid := r.Labels[reservationfirst.LabelPodUID]
		w.mu.Lock()
		gen := w.rsvGen[r.Namespace+"/"+r.Name]
		w.mu.Unlock()
		if !terminating[uid] && gen == w.gen {
			waiting[types.UID(uid)] = true
		}
	}
	return waiting
}

// checkNoPodLost (ReservationFirst or SchedulerSimulation: an eviction only with a place for the
// pod, reserved or predicted): every evicted pod (accepted, or migrated in background) is replaced by
// a Ready pod of its workload within lostGrace, unless the cluster changed since (a CR, a node
// deleted or tainted, a burst, a pod deleted: its place may be gone).
func (w *world) checkNoPodLost() string {
	pods := w.pods()
	readyOf := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if ready(p) {
			readyOf[workloadOf(p)] = append(readyOf[workloadOf(p)], p)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	used := map[types.UID]bool{}
	kept := w.lost[:0]
	for _, e := range w.lost {
		if e.churn != w.churn || len(readyOf[e.workload]) >= w.replicas[e.workload] {
			continue
		}
		replaced := false
		for _, p := range readyOf[e.workload] {
			if !used[p.UID] && seqOf(p) > e.seq {
				used[p.UID], replaced = true, true
				break
			}
		}
		if replaced {
			continue
		}
		if since := time.Since(e.at); since > lostGrace {
			w.lost = nil
			return fmt.Sprintf("invariant no-pod-lost: %s was evicted (%s) %s ago, the cluster unchanged since, and %s has %d of %d replicas Ready, none created since",
				e.name, e.kind, since, e.workload, len(readyOf[e.workload]), w.replicas[e.workload])
		}
		kept = append(kept, e)
	}
	w.lost = kept
	return ""
}

// seqOf is the creation number of a pod of the simulation (its name's suffix).
func seqOf(p *corev1.Pod) int {
	_, n, _ := strings.Cut(p.Name, "-")
	i, _ := strconv.Atoi(n)
	return i
}

// checkMigrationsEnd: every PodMigration ends (Succeeded, Failed or Aborted) by its deadline (the
// default, 10 minutes after its creation) plus what a migration that evicted its pod then waits for
// its replacement (the reservation's TTL: 2.5 minutes by default), and a tick.
func (w *world) checkMigrationsEnd() string {
	if !w.cfg.ReservationFirst {
		return ""
	}
	obj, err := w.ac.Tracker().List(pmGVR, pmGVK, "")
	if err != nil {
		panic(err)
	}
	now := time.Now()
	for _, pm := range obj.(*schedv1alpha1.PodMigrationList).Items {
		switch pm.Status.Phase {
		case schedv1alpha1.PodMigrationSucceeded, schedv1alpha1.PodMigrationFailed, schedv1alpha1.PodMigrationAborted:
			continue
		}
		limit := schedv1alpha1.DefaultPodMigrationDeadline + reservationfirst.PlacementTimeout + reservationfirst.TTLMargin + time.Minute + tick
		if age := now.Sub(pm.CreationTimestamp.Time); age > limit {
			return fmt.Sprintf("invariant pod-migration-ends: PodMigration %s/%s (pod %s, %s) is %q (%s: %s) %s after its creation",
				pm.Namespace, pm.Name, pm.Spec.PodName, pm.Spec.Mode, pm.Status.Phase, pm.Status.Reason, pm.Status.Message, age)
		}
	}
	return ""
}
