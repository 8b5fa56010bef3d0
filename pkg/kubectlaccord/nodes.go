package kubectlaccord

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	"github.com/accord-sched/accord/pkg/console"
	"github.com/accord-sched/accord/pkg/constraints"
)

// NodeReport is one node as `kubectl accord nodes` reports it.
type NodeReport struct {
	Name  string `json:"name"`
	Ready bool   `json:"ready"`
	// Offered is the node's ClusterScopedResource: the resources its resourcesFilter enables, sorted;
	// HasCR is false when the node has none (then it fits no pod that requests a CR resource).
	HasCR   bool             `json:"hasClusterScopedResource"`
	Offered []string         `json:"offered"`
	Scores  map[string]int64 `json:"scores,omitempty"`
	// Metric is false when the node has no NodeMetric with an update time.
	Metric     bool  `json:"metric"`
	AgeSeconds int64 `json:"metricAgeSeconds,omitempty"`
	// Stale: the metric is missing or older than the expiration, so neither binary judges the load.
	Stale     bool                 `json:"stale"`
	Resources []NodeResourceReport `json:"resources"`
	// EstimatedPods and GonePods are what the usage estimate counted (constraints.Adjustment).
	EstimatedPods int `json:"estimatedPods"`
	GonePods      int `json:"gonePods"`
	// Overloaded is LoadAware's Filter and LowNodeLoad's verdict: the estimated usage of Resource is
	// over its threshold.
	Overloaded bool   `json:"overloaded"`
	Resource   string `json:"overResource,omitempty"`
}

// NodeResourceReport is one resource's reported and estimated usage against its threshold.
type NodeResourceReport struct {
	Name             string `json:"name"`
	ReportedPercent  int64  `json:"reportedPercent"`
	EstimatedPercent int64  `json:"estimatedPercent"`
	ThresholdPercent int64  `json:"thresholdPercent,omitempty"`
	Over             bool   `json:"over"`
}

type nodesOptions struct {
	*Options
	output                    string
	policyFile, schedulerFile string
	now                       func() time.Time
}

func newNodesCommand(o *Options) *cobra.Command {
	no := &nodesOptions{Options: o}
	cmd := &cobra.Command{
		Use:   "nodes [NODE...]",
		Short: "Each node's ClusterScopedResource, and its reported and estimated usage against the load thresholds",
		Long: `Each node's ClusterScopedResource offer, and its NodeMetric's reported usage and the usage
estimated for the pods bound to it, against the load thresholds: the highThresholds of the first
LowNodeLoad of --policy (checked against --scheduler-config like accord-descheduler does), or else
the LoadAware args of --scheduler-config, or else LoadAware's defaults. LOAD is the verdict both
binaries reach, computed by pkg/constraints.`,
		Example: `  kubectl accord nodes
  kubectl accord nodes node-5 -o wide
  kubectl accord nodes --policy policy.yaml -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(no.output); err != nil {
				return err
			}
			th, err := loadThresholds(no.policyFile, no.schedulerFile)
			if err != nil {
				return usageError{err}
			}
			c, err := no.clients()
			if err != nil {
				return err
			}
			reports, err := nodeReports(cmd.Context(), c, args, th, no.clock())
			if err != nil {
				return err
			}
			return printNodes(no.Streams.Out, no.output, reports)
		},
	}
	cmd.Flags().StringVarP(&no.output, "output", "o", "", "Output format: json, yaml or wide")
	cmd.Flags().StringVar(&no.policyFile, "policy", "", "accord-descheduler's policy file, for LowNodeLoad's thresholds (default: LoadAware's defaults)")
	cmd.Flags().StringVar(&no.schedulerFile, "scheduler-config", "", "accord-scheduler's configuration: its LoadAware args without --policy; checked against --policy as accord-descheduler checks it")
	return cmd
}

func checkOutput(o string) error {
	switch o {
	case "", "wide", "json", "yaml":
		return nil
	}
	return usageError{fmt.Errorf("-o %q: the output is one of json, yaml, wide", o)}
}

// nodeReports reads the nodes (all, or those named), their CRs and NodeMetrics and the pods bound to
// them, and judges each.
func nodeReports(ctx context.Context, c *Clients, names []string, th console.Thresholds, now time.Time) ([]NodeReport, error) {
	var nodes []corev1.Node
	if len(names) == 0 {
		l, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, request(err, "list", "", "nodes", "")
		}
		nodes = l.Items
	} else {
		for _, n := range names {
			node, err := c.Kube.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return nil, request(err, "get", "", "nodes", "")
			}
			nodes = append(nodes, *node)
		}
	}
	slices.SortFunc(nodes, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	crs, err := c.Accord.SchedulingV1alpha1().ClusterScopedResources().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, request(err, "list", schedv1alpha1.SchemeGroupVersion.Group, "clusterscopedresources", "")
	}
	crByNode := map[string]*schedv1alpha1.ClusterScopedResource{}
	for i := range crs.Items {
		crByNode[crs.Items[i].Name] = &crs.Items[i]
	}
	nms, err := c.Accord.SloV1alpha1().NodeMetrics().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, request(err, "list", slov1alpha1.SchemeGroupVersion.Group, "nodemetrics", "")
	}
	nmByNode := map[string]*slov1alpha1.NodeMetric{}
	for i := range nms.Items {
		nmByNode[nms.Items[i].Name] = &nms.Items[i]
	}
	pods, err := c.Kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, request(err, "list", "", "pods", "")
	}
	// The pods the scheduler counts on a node: bound and not finished (kube-scheduler's informer
	// leaves out Succeeded and Failed pods).
	podsByNode := map[string][]*corev1.Pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		podsByNode[p.Spec.NodeName] = append(podsByNode[p.Spec.NodeName], p)
	}
	out := make([]NodeReport, 0, len(nodes))
	for i := range nodes {
		n := &nodes[i]
		out = append(out, judgeNode(n, crByNode[n.Name], nmByNode[n.Name], podsByNode[n.Name], th, now))
	}
	return out, nil
}

// judgeNode is one node's report. Every verdict (fresh, estimated usage, over a threshold) comes from
// pkg/constraints, the code LoadAware and LowNodeLoad decide with.
func judgeNode(n *corev1.Node, cr *schedv1alpha1.ClusterScopedResource, nm *slov1alpha1.NodeMetric, pods []*corev1.Pod, th console.Thresholds, now time.Time) NodeReport {
	r := NodeReport{Name: n.Name, Ready: constraints.NodeReady(n), Offered: []string{}, Resources: []NodeResourceReport{}}
	if cr != nil {
		r.HasCR = true
		for _, name := range slices.Sorted(maps.Keys(cr.Spec.ResourcesFilter)) {
			if constraints.Enabled(cr, name) {
				r.Offered = append(r.Offered, string(name))
			}
		}
		if len(cr.Spec.ResourcesScore) > 0 {
			r.Scores = map[string]int64{}
			for name := range cr.Spec.ResourcesScore {
				r.Scores[string(name)] = constraints.ResourceScore(cr, name)
			}
		}
	}
	r.Stale = !constraints.MetricFresh(nm, now, th.MaxAge)
	if nm == nil || nm.Status.UpdateTime == nil {
		return r
	}
	r.Metric = true
	r.AgeSeconds = int64(now.Sub(nm.Status.UpdateTime.Time) / time.Second)
	alloc := n.Status.Allocatable
	var thresholds []constraints.ResourceThreshold
	for _, name := range slices.Sorted(maps.Keys(th.Percent)) {
		thresholds = append(thresholds, constraints.ResourceThreshold{Name: name, Percent: th.Percent[name]})
	}
	load := constraints.NewLoad(nm)
	adj := th.Estimator.Adjust(load, alloc, len(pods), func(i int) *corev1.Pod { return pods[i] }, now)
	r.EstimatedPods, r.GonePods = adj.Estimated, adj.Departed
	names := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}
	for _, t := range thresholds {
		if !slices.Contains(names, t.Name) {
			names = append(names, t.Name)
		}
	}
	for _, name := range names {
		used, ok := nm.Status.NodeUsage[name]
		a, hasAlloc := alloc[name]
		if !ok || !hasAlloc || a.MilliValue() <= 0 {
			continue
		}
		rr := NodeResourceReport{Name: string(name), ReportedPercent: used.MilliValue() * 100 / a.MilliValue(), ThresholdPercent: th.Percent[name]}
		rr.EstimatedPercent = rr.ReportedPercent
		if est, ok := load.EstimatedUsage(name, &adj); ok {
			rr.EstimatedPercent = int64(est * 100 / a.AsApproximateFloat64())
		}
		if rr.ThresholdPercent > 0 && !r.Stale {
			one := []constraints.ResourceThreshold{{Name: name, Percent: rr.ThresholdPercent}}
			rr.Over = constraints.NewNodeLoad(load, alloc, one, nil).CheckEstimated(&adj, now, th.MaxAge).Overloaded
		}
		r.Resources = append(r.Resources, rr)
	}
	if !r.Stale {
		check := constraints.NewNodeLoad(load, alloc, thresholds, nil).CheckEstimated(&adj, now, th.MaxAge)
		r.Overloaded, r.Resource = check.Overloaded, string(check.Resource)
	}
	return r
}

func printNodes(w io.Writer, output string, reports []NodeReport) error {
	switch output {
	case "json", "yaml":
		return printObject(w, output, map[string]any{"nodes": reports})
	}
	wide := output == "wide"
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	header := "NODE\tREADY\tOFFERS\tMETRIC\tUSAGE (REPORTED/ESTIMATED/THRESHOLD)\tLOAD"
	if wide {
		header += "\tSCORES\tESTIMATED PODS"
	}
	fmt.Fprintln(tw, header)
	for _, r := range reports {
		offers := "<no CR>"
		if r.HasCR {
			offers = "<none>"
			if len(r.Offered) > 0 {
				offers = strings.Join(r.Offered, ",")
			}
		}
		metric := "<none>"
		if r.Metric {
			metric = (time.Duration(r.AgeSeconds) * time.Second).String()
		}
		var usage []string
		for _, rr := range r.Resources {
			u := fmt.Sprintf("%s %d%%/%d%%", rr.Name, rr.ReportedPercent, rr.EstimatedPercent)
			if rr.ThresholdPercent > 0 {
				u += fmt.Sprintf("/%d%%", rr.ThresholdPercent)
			}
			if rr.Over {
				u += "!"
			}
			usage = append(usage, u)
		}
		if len(usage) == 0 {
			usage = []string{"-"}
		}
		load := "ok"
		switch {
		case r.Stale:
			load = "stale (not judged)"
		case r.Overloaded:
			load = "over " + r.Resource
		}
		line := fmt.Sprintf("%s\t%t\t%s\t%s\t%s\t%s", r.Name, r.Ready, offers, metric, strings.Join(usage, " "), load)
		if wide {
			var scores []string
			for _, name := range slices.Sorted(maps.Keys(r.Scores)) {
				scores = append(scores, fmt.Sprintf("%s=%d", name, r.Scores[name]))
			}
			if len(scores) == 0 {
				scores = []string{"-"}
			}
			line += fmt.Sprintf("\t%s\t%d (gone %d)", strings.Join(scores, ","), r.EstimatedPods, r.GonePods)
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}
