package runtime

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/accord-sched/accord/pkg/descheduler/evictions"
)

// trackInProgress feeds the tracker of evictions in progress (soft, and with EvictionsInBackground
// in background) from the pod informer, so that a restarted descheduler counts them again from the
// pods' annotations, and makes the limiter and budget count them.
func (d *Descheduler) trackInProgress(opts Options) error {
	t := evictions.NewInProgress(opts.EvictionsInBackground, nil)
	if err := t.AddToInformer(opts.InformerFactory.Core().V1().Pods().Informer()); err != nil {
		return fmt.Errorf("tracking evictions in progress: %w", err)
	}
	d.synced = append(d.synced, t.HasSynced)
	d.limiter.SetInProgress(t)
	return nil
}

// beginSoftCycles starts recording the nominations of the profiles in evictionMode Soft, and
// returns one completeness flag per profile (all true).
func (d *Descheduler) beginSoftCycles() []bool {
	complete := make([]bool, len(d.profiles))
	for i, p := range d.profiles {
		complete[i] = true
		if p.evictor.Soft != nil {
			p.evictor.Soft.BeginCycle()
		}
	}
	return complete
}

// endSoftCycles removes the soft-eviction annotation of the pods a Soft profile whose plugins all ran
// to completion no longer nominated (see evictions.Soft), and of the pods annotated by no Soft
// profile of this policy (evictions.ClearOrphanSoftEvictions), and sets the in-progress gauge.
func (d *Descheduler) endSoftCycles(ctx context.Context, complete []bool) {
	defer func() {
		for kind, n := range d.limiter.InProgress().ByKind() {
			d.metrics.EvictionsInProgress.WithLabelValues(kind).Set(float64(n))
		}
	}()
	// A dry run (explain) writes nothing.
	if d.dryRun || d.client == nil {
		return
	}
	pods, err := d.pods.List(labels.Everything())
	if err != nil {
		klog.FromContext(ctx).Error(err, "Listing pods for soft eviction's clean-up")
		return
	}
	softProfiles := map[string]bool{}
	for _, p := range d.profiles {
		if p.evictor.Soft != nil {
			softProfiles[p.Name] = true
		}
	}
	if ctx.Err() == nil {
		evictions.ClearOrphanSoftEvictions(ctx, d.client, pods, softProfiles, nil)
	}
	for i, p := range d.profiles {
		s := p.evictor.Soft
		if s == nil {
			continue
		}
		rec := p.evictor.Recorder
		s.EndCycle(ctx, pods, complete[i] && ctx.Err() == nil, func(pod *corev1.Pod) {
			if rec != nil {
				rec.Eventf(pod, nil, corev1.EventTypeNormal, evictions.ReasonSoftEvictionCleared, "Descheduling",
					"Profile %s no longer nominates the pod; %s removed", p.Name, evictions.SoftEvictionAnnotation)
			}
		})
	}
}
