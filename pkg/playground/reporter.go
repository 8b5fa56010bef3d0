package playground

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/klog/v2"

	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	"github.com/accord-sched/accord/pkg/localcluster"
)

// BaselineUsageAnnotation holds, as a JSON ResourceList, the usage the reporter attributes to a node
// besides its pods (system daemons, noisy neighbours). Change it to make a node hot or cool.
const BaselineUsageAnnotation = "sim.accord.dev/baseline-usage"

// defaultReportInterval applies to NodeMetrics without spec.reportIntervalSeconds.
const defaultReportInterval = 10 * time.Second

// metricReporter plays the node agent that fills NodeMetric status: usage = baseline + the requests
// of the pods running on the node.
type metricReporter struct {
	env  *localcluster.Cluster
	tick time.Duration
}

func (r *metricReporter) run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("metric-reporter")
	last := map[string]time.Time{}
	ticker := time.NewTicker(r.tick)
	defer ticker.Stop()
	for {
		if err := r.reportDue(ctx, last); err != nil && ctx.Err() == nil {
			logger.Error(err, "Reporting node metrics failed; retrying next tick")
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// reportDue refreshes every NodeMetric whose report interval has passed since its last report.
func (r *metricReporter) reportDue(ctx context.Context, last map[string]time.Time) error {
	metrics, err := r.env.Accord.SloV1alpha1().NodeMetrics().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	now := time.Now()
	for i := range metrics.Items {
		nm := &metrics.Items[i]
		interval := defaultReportInterval
		if s := nm.Spec.ReportIntervalSeconds; s != nil && *s > 0 {
			interval = time.Duration(*s) * time.Second
		}
		if now.Sub(last[nm.Name]) < interval {
			continue
		}
		if err := r.report(ctx, nm, now); err != nil {
			return fmt.Errorf("NodeMetric %s: %w", nm.Name, err)
		}
		last[nm.Name] = now
	}
	return nil
}

func (r *metricReporter) report(ctx context.Context, nm *slov1alpha1.NodeMetric, now time.Time) error {
	usage := corev1.ResourceList{}
	if raw := nm.Annotations[BaselineUsageAnnotation]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &usage); err != nil {
			return fmt.Errorf("annotation %s: %w", BaselineUsageAnnotation, err)
		}
	}
	pods, err := r.env.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{
		FieldSelector: fields.AndSelectors(
			fields.OneTermEqualSelector("spec.nodeName", nm.Name),
			fields.OneTermEqualSelector("status.phase", string(corev1.PodRunning)),
		).String(),
	})
	if err != nil {
		return err
	}
	podsUsage := make([]slov1alpha1.PodUsage, 0, len(pods.Items))
	for _, pod := range pods.Items {
		podUsage := corev1.ResourceList{}
		for _, c := range pod.Spec.Containers {
			for name, q := range c.Resources.Requests {
				add(podUsage, name, q)
				add(usage, name, q)
			}
		}
		podsUsage = append(podsUsage, slov1alpha1.PodUsage{Namespace: pod.Namespace, Name: pod.Name, Usage: podUsage})
	}
	sort.Slice(podsUsage, func(i, j int) bool {
		if podsUsage[i].Namespace != podsUsage[j].Namespace {
			return podsUsage[i].Namespace < podsUsage[j].Namespace
		}
		return podsUsage[i].Name < podsUsage[j].Name
	})
	t := metav1.NewTime(now)
	nm = nm.DeepCopy()
	nm.Status = slov1alpha1.NodeMetricStatus{UpdateTime: &t, NodeUsage: usage, PodsUsage: podsUsage}
	_, err = r.env.Accord.SloV1alpha1().NodeMetrics().UpdateStatus(ctx, nm, metav1.UpdateOptions{})
	return err
}

func add(list corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
	cur := list[name]
	cur.Add(q)
	list[name] = cur
}
