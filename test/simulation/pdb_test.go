package simulation

import (
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"
)

// PodDisruptionBudgets: the simulated apiserver answers an Eviction as kube-apiserver's eviction
// subresource does (pkg/registry/core/pod/storage/eviction.go), from a status the simulated
// disruption controller computes as kube-controller-manager's does (pkg/controller/disruption).

var (
	pdbGVR = policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets")
	pdbGVK = policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget")
)

// disruptionTimeout is the disruption controller's DeletionTimeout: how long an eviction the
// apiserver accepted counts as a disruption (its pod not healthy) before the pod is seen deleted.
const disruptionTimeout = 2 * time.Minute

// PDB is a workload's PodDisruptionBudget: one of MinAvailable and MaxUnavailable, an int or a
// percentage, over the workload's pods.
type PDB struct {
	MinAvailable, MaxUnavailable *intstr.IntOrString
}

func (b *PDB) String() string {
	if b.MinAvailable != nil {
		return "minAvailable=" + b.MinAvailable.String()
	}
	return "maxUnavailable=" + b.MaxUnavailable.String()
}

// drawPDB draws a workload's PodDisruptionBudget, or none. A VM's eviction is answered by
// KubeVirt's webhook before any budget is read: VM workloads get none.
func drawPDB(t *rapid.T, vm bool) *PDB {
	if vm || rapid.IntRange(0, 2).Draw(t, "pdb") == 0 {
		return nil
	}
	v := intstr.FromInt32(int32(rapid.IntRange(0, 3).Draw(t, "pdbCount")))
	if rapid.Bool().Draw(t, "pdbPercent") {
		v = intstr.FromString(fmt.Sprintf("%d%%", rapid.SampledFrom([]int{0, 25, 50, 75, 100}).Draw(t, "pdbPercentage")))
	}
	if rapid.Bool().Draw(t, "pdbMinAvailable") {
		return &PDB{MinAvailable: &v}
	}
	return &PDB{MaxUnavailable: &v}
}

func pdbName(wl string) string { return wl + "-pdb" }

// createPDBs creates the workloads' PodDisruptionBudgets (selecting the workload's label).
func (w *world) createPDBs() error {
	for i, spec := range w.cfg.Workloads {
		if spec.PDB == nil {
			continue
		}
		wl := workloadName(i)
		pdb := &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: spec.Namespace, Name: pdbName(wl), UID: types.UID("uid-" + pdbName(wl)), Generation: 1},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: spec.PDB.MinAvailable, MaxUnavailable: spec.PDB.MaxUnavailable,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"workload": wl}}},
		}
		if err := w.kc.Tracker().Create(pdbGVR, pdb, pdb.Namespace); err != nil {
			return err
		}
	}
	return nil
}

func (w *world) pdbList() []*policyv1.PodDisruptionBudget {
	obj, err := w.kc.Tracker().List(pdbGVR, pdbGVK, "")
	if err != nil {
		panic(err)
	}
	list := obj.(*policyv1.PodDisruptionBudgetList)
	out := make([]*policyv1.PodDisruptionBudget, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out
}

// pdbsFor are the PodDisruptionBudgets that select p (in its namespace, by a non-empty selector).
func (w *world) pdbsFor(p *corev1.Pod) []*policyv1.PodDisruptionBudget {
	var out []*policyv1.PodDisruptionBudget
	for _, pdb := range w.pdbList() {
		if pdb.Namespace != p.Namespace {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(p.Labels)) {
			out = append(out, pdb)
		}
	}
	return out
}

// selectedBy are the pods pdb selects.
func selectedBy(pdb *policyv1.PodDisruptionBudget, all []*corev1.Pod) []*corev1.Pod {
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		panic(err)
	}
	var out []*corev1.Pod
	for _, p := range all {
		if p.Namespace == pdb.Namespace && sel.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return out
}

// syncPDBs is the disruption controller: each PodDisruptionBudget's status from its pods now.
func (w *world) syncPDBs() {
	all := w.pods()
	for _, pdb := range w.pdbList() {
		w.syncPDB(pdb, all)
	}
}

// syncPDB computes pdb's status as the disruption controller does, writes it when it changed and
// returns it: expectedPods (the workload's scale for maxUnavailable and percentages, the pods
// selected for an integer minAvailable), desiredHealthy (percentages rounded up), currentHealthy
// (Ready pods not terminating and not in disruptedPods), disruptionsAllowed (currentHealthy -
// desiredHealthy, at least 0) and disruptedPods (the apiserver's entries whose pod is not yet seen
// terminating, for at most disruptionTimeout).
func (w *world) syncPDB(pdb *policyv1.PodDisruptionBudget, all []*corev1.Pod) *policyv1.PodDisruptionBudget {
	now := time.Now()
	pods := selectedBy(pdb, all)
	var scale int32
	if len(pods) > 0 {
		// The pods' controller's scale (one ReplicaSet per workload).
		scale = int32(w.replicas[workloadOf(pods[0])])
	}
	var expected, desired int32
	switch {
	case pdb.Spec.MaxUnavailable != nil:
		expected = scale
		n, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, int(expected), true)
		if err != nil {
			panic(err)
		}
		desired = max(expected-int32(n), 0)
	case pdb.Spec.MinAvailable.Type == intstr.Int:
		expected, desired = int32(len(pods)), pdb.Spec.MinAvailable.IntVal
	default:
		expected = scale
		n, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, int(expected), true)
		if err != nil {
			panic(err)
		}
		desired = int32(n)
	}
	disrupted := map[string]metav1.Time{}
	var healthy int32
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if at, ok := pdb.Status.DisruptedPods[p.Name]; ok && at.Add(disruptionTimeout).After(now) {
			disrupted[p.Name] = at
			continue
		}
		if ready(p) {
			healthy++
		}
	}
	allowed := healthy - desired
	if expected <= 0 || allowed < 0 {
		allowed = 0
	}
	q := pdb.DeepCopy()
	q.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptedPods: disrupted,
		DisruptionsAllowed: allowed, CurrentHealthy: healthy, DesiredHealthy: desired, ExpectedPods: expected}
	if len(disrupted) == 0 {
		q.Status.DisruptedPods = nil
	}
	if equality.Semantic.DeepEqual(q.Status, pdb.Status) {
		return q
	}
	if err := w.kc.Tracker().Update(pdbGVR, q, q.Namespace); err != nil {
		panic(err)
	}
	obj, err := w.kc.Tracker().Get(pdbGVR, q.Namespace, q.Name)
	if err != nil {
		panic(err)
	}
	return obj.(*policyv1.PodDisruptionBudget).DeepCopy()
}

// admitEviction is the apiserver's PodDisruptionBudget check of an Eviction of p (a pod not
// terminating, not Pending): with no budget it is allowed; with more than one it is refused (500);
// with one, the disruption controller caught up with the pods (syncPDB), it is refused with 429
// and the apiserver's cause when the budget allows no disruption, else the budget's
// disruptionsAllowed is decremented and p recorded in its disruptedPods. Invariant `pdb`: an
// eviction it allows leaves at least the budget's desired healthy pods, computed here from the
// budget's spec and the workload's replicas.
func (w *world) admitEviction(p *corev1.Pod) error {
	if p.Status.Phase == corev1.PodPending || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return nil
	}
	pdbs := w.pdbsFor(p)
	switch len(pdbs) {
	case 0:
		return nil
	case 1:
	default:
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 500,
			Message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."}}
	}
	all := w.pods()
	pdb := w.syncPDB(pdbs[0], all)
	if pdb.Status.DisruptionsAllowed == 0 {
		err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause,
			Message: fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy)})
		return err
	}
	pdb.Status.DisruptionsAllowed--
	if pdb.Status.DisruptedPods == nil {
		pdb.Status.DisruptedPods = map[string]metav1.Time{}
	}
	pdb.Status.DisruptedPods[p.Name] = metav1.NewTime(time.Now())
	if err := w.kc.Tracker().Update(pdbGVR, pdb, pdb.Namespace); err != nil {
		return err
	}
	// The oracle: the workload's Ready pods but p, against the budget read from its spec.
	healthy := 0
	for _, q := range selectedBy(pdb, all) {
		if q.UID != p.UID && ready(q) {
			healthy++
		}
	}
	if want := desiredHealthy(pdb, w.replicas[workloadOf(p)], len(selectedBy(pdb, all))); healthy < want {
		w.fail("invariant pdb: the eviction of %s is accepted and leaves %d healthy pods of %s; its PodDisruptionBudget %s (%s) wants %d",
			p.Name, healthy, workloadOf(p), pdb.Name, pdbSpec(pdb), want)
	}
	return nil
}

// desiredHealthy is what a budget promises, read from its spec: minAvailable n (or p% of the
// replicas, rounded up), or the replicas less maxUnavailable n (or p% of them, rounded up).
func desiredHealthy(pdb *policyv1.PodDisruptionBudget, replicas, selected int) int {
	pct := func(v *intstr.IntOrString) int {
		var n int
		if _, err := fmt.Sscanf(v.StrVal, "%d%%", &n); err != nil {
			panic(err)
		}
		return int(math.Ceil(float64(n*replicas) / 100))
	}
	if selected == 0 {
		return 0
	}
	switch v := pdb.Spec.MaxUnavailable; {
	case v != nil && v.Type == intstr.Int:
		return max(replicas-int(v.IntVal), 0)
	case v != nil:
		return max(replicas-pct(v), 0)
	}
	if v := pdb.Spec.MinAvailable; v.Type == intstr.Int {
		return int(v.IntVal)
	}
	return pct(pdb.Spec.MinAvailable)
}

func pdbSpec(pdb *policyv1.PodDisruptionBudget) string {
	if pdb.Spec.MinAvailable != nil {
		return "minAvailable " + pdb.Spec.MinAvailable.String()
	}
	return "maxUnavailable " + pdb.Spec.MaxUnavailable.String()
}

// protectedWithoutPDB: the policy protects pods no PodDisruptionBudget selects (DefaultEvictor's
// podProtections.extraEnabled PodsWithoutPDB) and none selects p.
func (w *world) protectedWithoutPDB(p *corev1.Pod) bool {
	return w.cfg.PodsWithoutPDB && len(w.pdbsFor(p)) == 0
}
