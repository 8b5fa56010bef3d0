package simulator

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	"github.com/accord-sched/accord/pkg/informertransform"
)

// TestTrimmedPodsSimulateAlike: the simulated scheduler (kube-scheduler's default profile: its
// NodeResourcesFit, NodePorts, NodeAffinity, TaintToleration, InterPodAffinity, PodTopologySpread,
// the volume plugins, ImageLocality, ...) predicts the same for every pod of varied clusters, over
// the same pods and nodes with every field informertransform.TrimPod drops and trimmed, as
// accord-descheduler's informer keeps them: feasibility, node, scores, counts and reason.
func TestTrimmedPodsSimulateAlike(t *testing.T) {
	now := time.Now()
	for seed := range uint64(4) {
		var got [2][]string
		var preds []Prediction
		for i, transform := range []func(any) (any, error){informertransform.NewPodSharer().Transform, informertransform.NewTrimmingPodSharer().Transform} {
			var objs []any
			var pods []*corev1.Pod
			for _, o := range fake.VariedCluster(seed, now) {
				objs = append(objs, o)
				if p, ok := o.(*corev1.Pod); ok {
					pods = append(pods, p)
				}
			}
			e := newTestEnv(t, envOptions{transform: transform, quiet: true}, objs...)
			e.beginCycle()
			for _, p := range pods {
				// The cached pod, as the descheduler's plugins hand it to the simulation.
				cached, err := e.factory.Core().V1().Pods().Lister().Pods(p.Namespace).Get(p.Name)
				if err != nil {
					t.Fatal(err)
				}
				pred := e.predict(cached)
				got[i] = append(got[i], fmt.Sprintf("%s %+v", p.Name, pred))
				if i == 0 {
					preds = append(preds, pred)
				}
			}
		}
		if !slices.Equal(got[0], got[1]) {
			t.Errorf("seed %d: predictions over untrimmed and trimmed pods differ:\n%s\n---\n%s", seed, strings.Join(got[0], "\n"), strings.Join(got[1], "\n"))
		}
		moves, stays, infeasible := 0, 0, 0
		for _, p := range preds {
			switch {
			case !p.Feasible:
				infeasible++
			case p.Moves():
				moves++
			default:
				stays++
			}
		}
		if moves == 0 || infeasible == 0 {
			t.Errorf("seed %d: want pods that move and pods that fit nowhere: %d move, %d stay, %d fit nowhere", seed, moves, stays, infeasible)
		}
	}
}
