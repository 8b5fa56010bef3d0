package kubectlaccord

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	"github.com/accord-sched/accord/pkg/descheduler/explain"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
)

// deschedulerPolicyAPIVersion and deschedulerPolicyKind name a DeschedulerPolicy document.
const (
	deschedulerPolicyAPIVersion = "descheduler/v1alpha2"
	deschedulerPolicyKind       = "DeschedulerPolicy"
)

// WhatIfReport is what `kubectl accord what-if` reports: explain's rows for one dry-run descheduling
// cycle over the cluster with the file's objects in place of the live ones.
type WhatIfReport struct {
	File   string `json:"file"`
	Policy string `json:"policy"`
	// Replaced are the file's objects; New is true for one no live object has the name of.
	Replaced []ReplacedObject `json:"replaced"`
	// Evictions counts the rows with verdict evict: what the cycle would evict.
	Evictions int `json:"evictions"`
	// Held counts the rows Held reports: evictions this cycle defers to later ones.
	Held int `json:"held"`
	// Blocked counts the other blocked rows.
	Blocked int           `json:"blocked"`
	Rows    []explain.Row `json:"rows"`
}

// ReplacedObject is one object of the file.
type ReplacedObject struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	New  bool   `json:"new,omitempty"`
}

// whatIfFile is a decoded what-if file: the objects to overlay and the policy, if it holds one.
type whatIfFile struct {
	overlay overlay
	order   []ReplacedObject
	policy  []byte
}

// parseWhatIf decodes the documents of a what-if file, strictly: ClusterScopedResources, NodeMetrics,
// their lists (or a v1 List of them), and at most one DeschedulerPolicy.
func parseWhatIf(r io.Reader) (*whatIfFile, error) {
	f := &whatIfFile{overlay: overlay{crs: map[string]*schedv1alpha1.ClusterScopedResource{}, nms: map[string]*slov1alpha1.NodeMetric{}}}
	yr := utilyaml.NewYAMLReader(bufio.NewReader(r))
	for doc := 1; ; doc++ {
		data, err := yr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		if len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		if string(j) == "null" {
			continue
		}
		if err := f.add(j, data); err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
	}
	if len(f.order) == 0 && f.policy == nil {
		return nil, errors.New("no ClusterScopedResource, NodeMetric or DeschedulerPolicy in it")
	}
	return f, nil
}

// add decodes one object (JSON; doc is its YAML, kept for a policy).
func (f *whatIfFile) add(j, doc []byte) error {
	var tm metav1.TypeMeta
	if err := json.Unmarshal(j, &tm); err != nil {
		return err
	}
	gvk := tm.GroupVersionKind()
	switch {
	case tm.APIVersion == deschedulerPolicyAPIVersion && tm.Kind == deschedulerPolicyKind:
		if f.policy != nil {
			return errors.New("a second DeschedulerPolicy: the file holds at most one")
		}
		f.policy = doc
	case tm.APIVersion == "v1" && tm.Kind == "List",
		gvk.GroupVersion() == schedv1alpha1.SchemeGroupVersion && tm.Kind == "ClusterScopedResourceList",
		gvk.GroupVersion() == slov1alpha1.SchemeGroupVersion && tm.Kind == "NodeMetricList":
		var l struct {
			metav1.TypeMeta `json:",inline"`
			metav1.ListMeta `json:"metadata,omitempty"`
			Items           []json.RawMessage `json:"items"`
		}
		if err := strictJSON(j, &l); err != nil {
			return fmt.Errorf("%s: %w", tm.Kind, err)
		}
		for i, item := range l.Items {
			if err := f.add(item, nil); err != nil {
				return fmt.Errorf("%s items[%d]: %w", tm.Kind, i, err)
			}
		}
	case gvk.GroupVersion() == schedv1alpha1.SchemeGroupVersion && tm.Kind == "ClusterScopedResource":
		cr := &schedv1alpha1.ClusterScopedResource{}
		if err := strictJSON(j, cr); err != nil {
			return fmt.Errorf("ClusterScopedResource: %w", err)
		}
		if cr.Name == "" {
			return errors.New("ClusterScopedResource: metadata.name is empty")
		}
		if _, dup := f.overlay.crs[cr.Name]; dup {
			return fmt.Errorf("ClusterScopedResource %s: named twice", cr.Name)
		}
		f.overlay.crs[cr.Name] = cr
		f.order = append(f.order, ReplacedObject{Kind: tm.Kind, Name: cr.Name})
	case gvk.GroupVersion() == slov1alpha1.SchemeGroupVersion && tm.Kind == "NodeMetric":
		nm := &slov1alpha1.NodeMetric{}
		if err := strictJSON(j, nm); err != nil {
			return fmt.Errorf("NodeMetric: %w", err)
		}
		if nm.Name == "" {
			return errors.New("NodeMetric: metadata.name is empty")
		}
		if _, dup := f.overlay.nms[nm.Name]; dup {
			return fmt.Errorf("NodeMetric %s: named twice", nm.Name)
		}
		f.overlay.nms[nm.Name] = nm
		f.order = append(f.order, ReplacedObject{Kind: tm.Kind, Name: nm.Name})
	default:
		return fmt.Errorf("apiVersion %q kind %q: what-if takes %s ClusterScopedResources, %s NodeMetrics (or their lists) and a %s %s",
			tm.APIVersion, tm.Kind, schedv1alpha1.SchemeGroupVersion, slov1alpha1.SchemeGroupVersion, deschedulerPolicyAPIVersion, deschedulerPolicyKind)
	}
	return nil
}

func strictJSON(j []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

type whatIfOptions struct {
	*Options
	output                    string
	file                      string
	policyFile, schedulerFile string
}

func newWhatIfCommand(o *Options) *cobra.Command {
	wo := &whatIfOptions{Options: o}
	cmd := &cobra.Command{
		Use:   "what-if -f FILE",
		Short: "The evictions the descheduler would make after a change, and where each replacement would land",
		Long: `what-if previews a change before it is made. FILE (- for stdin) holds, as YAML or JSON documents,
ClusterScopedResources and NodeMetrics as they would be after the change (or their lists, as
kubectl get -o yaml prints them) and/or the DeschedulerPolicy to run (else --policy's). what-if runs
one dry-run descheduling cycle of the policy, the code accord-descheduler explain runs, over the
cluster's state read through informers with the file's objects in place of the live ones of the
same name (an object of a new name is added), and prints each candidate pod: the plugin that
nominates it, whether it would be evicted or what blocks it, and the node the scheduler simulation
predicts for its replacement. Rows held by the eviction limits, a workload's disruption budget or
a closed window are the evictions of later cycles. Nothing is written to the cluster: no eviction, Event, Reservation or object change.
A NodeMetric's status.updateTime is used as given: one older than the policy's expiration is stale.`,
		Example: `  kubectl get csres node-5 -o yaml > node-5.yaml   # edit: example.com/memory: false
  kubectl accord what-if -f node-5.yaml --policy policy.yaml --scheduler-config scheduler-config.yaml
  kubectl accord what-if -f new-policy.yaml -n shop -o json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("what-if takes no arguments (got %q); the change is in -f FILE", args)}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(wo.output); err != nil {
				return err
			}
			if wo.file == "" {
				return usageError{errors.New("-f FILE is required: the objects as they would be after the change")}
			}
			rep, err := wo.run(cmd.Context())
			if err != nil {
				return err
			}
			return printWhatIf(wo.Streams.Out, wo.output, rep)
		},
	}
	cmd.Flags().StringVarP(&wo.file, "filename", "f", "", "File of ClusterScopedResources, NodeMetrics and/or a DeschedulerPolicy as they would be after the change (- for stdin)")
	cmd.Flags().StringVarP(&wo.output, "output", "o", "", "Output format: json, yaml or wide")
	cmd.Flags().StringVar(&wo.policyFile, "policy", "", "accord-descheduler's policy file, when FILE holds no DeschedulerPolicy")
	cmd.Flags().StringVar(&wo.schedulerFile, "scheduler-config", "", "accord-scheduler's configuration, for the policy's SchedulerSimulation")
	return cmd
}

func (wo *whatIfOptions) run(ctx context.Context) (*WhatIfReport, error) {
	var in io.Reader = wo.Streams.In
	if wo.file != "-" {
		fh, err := os.Open(wo.file)
		if err != nil {
			return nil, usageError{fmt.Errorf("-f: %w", err)}
		}
		defer fh.Close()
		in = fh
	}
	f, err := parseWhatIf(in)
	if err != nil {
		return nil, usageError{fmt.Errorf("-f %s: %w", wo.file, err)}
	}
	policy := wo.policyFile
	switch {
	case f.policy != nil && wo.policyFile != "":
		return nil, usageError{fmt.Errorf("-f %s holds a DeschedulerPolicy and --policy names another: give one", wo.file)}
	case f.policy != nil:
		// The runner loads a policy from a file (with the scheduler configuration's shared args).
		dir, err := os.MkdirTemp("", "kubectl-accord-what-if-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		policy = filepath.Join(dir, "policy.yaml")
		if err := os.WriteFile(policy, f.policy, 0o600); err != nil {
			return nil, err
		}
	case wo.policyFile == "":
		return nil, usageError{fmt.Errorf("no policy: -f %s holds no DeschedulerPolicy; give accord-descheduler's with --policy", wo.file)}
	}
	ns, filtered, err := wo.Flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, err
	}
	c, err := wo.clients()
	if err != nil {
		return nil, err
	}
	rep := &WhatIfReport{File: wo.file, Policy: wo.policyFile, Rows: []explain.Row{}}
	if f.policy != nil {
		rep.Policy = wo.file
	}
	if rep.Replaced, err = checkWhatIfAccess(ctx, c, f); err != nil {
		return nil, err
	}
	cfg, err := wo.Flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	// The descheduler's runtime logs through klog; a kubectl plugin prints only its answer.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	rows, err := explain.Run(ctx, runner.Config{RestConfig: cfg, PolicyConfigFile: policy, SchedulerConfigFile: wo.schedulerFile,
		WrapAccordClient: f.overlay.wrap})
	if err != nil {
		return nil, fmt.Errorf("the descheduler's dry-run cycle of %s with %s: %w", rep.Policy, wo.file, err)
	}
	for _, r := range rows {
		if filtered && r.Namespace != ns {
			continue
		}
		switch {
		case r.Verdict == explain.VerdictEvict:
			rep.Evictions++
		case Held(r):
			rep.Held++
		default:
			rep.Blocked++
		}
		rep.Rows = append(rep.Rows, r)
	}
	return rep, nil
}

// Held reports whether the cycle holds row's eviction only for now: by the eviction limits of the
// cycle, by its workload's disruption budget (maxMigratingPerWorkload: one move at a time), or by
// a closed eviction window. Later cycles evict it once these allow, to the node predicted now if
// the cluster does not change meanwhile.
func Held(row explain.Row) bool {
	switch row.BlockedBy {
	case "limit", explain.BlockedByWorkloadBudget, explain.BlockedByWindow:
		return row.Verdict == explain.VerdictBlocked
	}
	return false
}

// checkWhatIfAccess reads what the cycle needs most (pods, nodes, and the kinds the file holds) so
// that a refusal names the RBAC missing, and tells which of the file's objects are new.
func checkWhatIfAccess(ctx context.Context, c *Clients, f *whatIfFile) ([]ReplacedObject, error) {
	one := metav1.ListOptions{Limit: 1}
	if _, err := c.Kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, one); err != nil {
		return nil, request(err, "list", "", "pods", "")
	}
	if _, err := c.Kube.CoreV1().Nodes().List(ctx, one); err != nil {
		return nil, request(err, "list", "", "nodes", "")
	}
	out := make([]ReplacedObject, 0, len(f.order))
	for _, o := range f.order {
		var err error
		var group, resource string
		switch o.Kind {
		case "ClusterScopedResource":
			group, resource = schedv1alpha1.SchemeGroupVersion.Group, "clusterscopedresources"
			_, err = c.Accord.SchedulingV1alpha1().ClusterScopedResources().Get(ctx, o.Name, metav1.GetOptions{})
		case "NodeMetric":
			group, resource = slov1alpha1.SchemeGroupVersion.Group, "nodemetrics"
			_, err = c.Accord.SloV1alpha1().NodeMetrics().Get(ctx, o.Name, metav1.GetOptions{})
		}
		if apierrors.IsNotFound(err) {
			o.New, err = true, nil
		}
		if err != nil {
			return nil, request(err, "get", group, resource, "")
		}
		out = append(out, o)
	}
	return out, nil
}

func printWhatIf(w io.Writer, output string, r *WhatIfReport) error {
	switch output {
	case "json", "yaml":
		return printObject(w, output, r)
	}
	var changes []string
	for _, o := range r.Replaced {
		s := o.Kind + " " + o.Name
		if o.New {
			s += " (new)"
		}
		changes = append(changes, s)
	}
	if len(changes) == 0 {
		changes = []string{"no object"}
	}
	fmt.Fprintf(w, "What if %s (%s), policy %s, in one dry-run descheduling cycle:\n", r.File, strings.Join(changes, ", "), r.Policy)
	fmt.Fprintf(w, "  %d eviction(s) now, %d held for later cycles (eviction limits, workload budget, window), %d blocked\n", r.Evictions, r.Held, r.Blocked)
	if len(r.Rows) == 0 {
		_, err := fmt.Fprintln(w, "No candidate pod.")
		return err
	}
	wide := output == "wide"
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	header := "POD\tNODE\tPLUGIN\tVERDICT\tBLOCKED-BY\tPREDICTED NODE"
	if wide {
		header += "\tPROFILE\tSCORE\tREASON\tDETAIL"
	}
	fmt.Fprintln(tw, header)
	for _, row := range r.Rows {
		line := fmt.Sprintf("%s/%s\t%s\t%s\t%s\t%s\t%s", row.Namespace, row.Pod, row.Node, dashIfEmpty(row.Plugin), row.Verdict,
			dashIfEmpty(row.BlockedBy), dashIfEmpty(row.PredictedNode))
		if wide {
			score := "-"
			if row.Score != nil {
				score = fmt.Sprint(*row.Score)
			}
			line += fmt.Sprintf("\t%s\t%s\t%s\t%s", row.Profile, score, dashIfEmpty(oneLine(row.Reason)), dashIfEmpty(oneLine(row.Message)))
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
