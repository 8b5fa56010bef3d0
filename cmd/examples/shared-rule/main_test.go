package main

import (
	"context"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	fwk "k8s.io/kube-scheduler/framework"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/accord-sched/accord/cmd/examples/shared-rule/maxlabeled/descheduler"
	"github.com/accord-sched/accord/cmd/examples/shared-rule/maxlabeled/scheduler"
	"github.com/accord-sched/accord/pkg/constraints"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	deschedplugins "github.com/accord-sched/accord/pkg/descheduler/framework/plugins"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/schedulersimulation"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
	"github.com/accord-sched/accord/pkg/descheduler/simulator"
	schedplugins "github.com/accord-sched/accord/pkg/scheduler/plugins"
)

// TestChecklistFiles counts the files a rule both binaries enforce takes, in its two shapes.
//
// The out-of-tree shape is this example: its rule, both plugins and both binaries are this folder,
// at most 8 files in at most 4 packages as the checklist "A rule both binaries enforce"
// (pkg/descheduler/README.md) promises, and nothing outside it but the descheduler's and the
// scheduler's public options.
//
// The in-tree shape is the checklist's numbered list of the files an in-tree rule touches, read
// from the README and counted: at most 8 files, in at most inTreeListPackages packages; every
// listed file is in a package that exists (a rule's own file, named myrule, in a folder that
// exists), and none is in apis/config (a shared rule's args need nothing there:
// TestInTreeShapedRule builds one). The rules Accord has, which keep the older shape, are measured
// too: each scheduler plugin of accord-scheduler's descriptor list whose args an in-tree descheduler
// plugin follows, with that descheduler plugin. Such a rule touches the hand-written Go files (no
// tests, no generated code) of its two plugin packages and every other hand-written Go file of the
// module (test support aside) that names one of their args types or Name constants (args types,
// defaults, validation, registration, following, readers of the args); the counts may not grow
// past inTreeCeiling.
func TestChecklistFiles(t *testing.T) {
	files, pkgs := goFiles(t, ".", func(string) bool { return true })
	t.Logf("the example rule: %d files in %d packages: %v", len(files), len(pkgs), files)
	if len(files) > 8 || len(pkgs) > 4 {
		t.Errorf("the example rule takes %d files in %d packages; the checklist promises at most 8 in 4", len(files), len(pkgs))
	}
	for _, f := range files {
		imports, err := importsOf(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range imports {
			if strings.HasPrefix(imp, module) && !strings.HasPrefix(imp, module+"cmd/examples/shared-rule") && !exampleMayImport[imp] {
				t.Errorf("%s imports %s: the example rule must take nothing of Accord's but the binaries' public options and plugin APIs", f, imp)
			}
		}
	}

	listed := checklistFiles(t)
	listedPkgs := map[string]bool{}
	for _, f := range listed {
		dir := filepath.Dir(f)
		listedPkgs[dir] = true
		if strings.HasPrefix(f, "apis/config") {
			t.Errorf("the in-tree checklist lists %s: a shared rule's args need nothing in apis/config", f)
		}
		if strings.Contains(f, "myrule") {
			dir = strings.TrimSuffix(dir, "/myrule")
		}
		if st, err := os.Stat(filepath.Join("../../..", dir)); err != nil || !st.IsDir() {
			t.Errorf("the in-tree checklist lists %s, in a folder that does not exist", f)
		} else if !strings.Contains(f, "myrule") {
			if _, err := os.Stat(filepath.Join("../../..", f)); err != nil {
				t.Errorf("the in-tree checklist lists %s, which does not exist", f)
			}
		}
	}
	t.Logf("the in-tree checklist: %d files in %d packages: %v", len(listed), len(listedPkgs), listed)
	if len(listed) < 4 {
		t.Fatalf("read %d files from the in-tree checklist of pkg/descheduler/README.md; is its numbered list still there?", len(listed))
	}
	if len(listed) > 8 || len(listedPkgs) > inTreeListPackages {
		t.Errorf("the in-tree checklist lists %d files in %d packages; at most 8 in %d", len(listed), len(listedPkgs), inTreeListPackages)
	}

	rules := 0
	for _, sd := range schedplugins.Descriptors() {
		if sd.Args == nil {
			continue
		}
		for _, dd := range deschedplugins.Descriptors() {
			follower, ok := dd.Args.(framework.SchedulerFollower)
			if !ok || !slices.Contains(follower.FollowsScheduler(), sd.Name) {
				continue
			}
			rules++
			schedPkg, deschedPkg := funcPackage(sd.Factory), funcPackage(dd.Factory)
			tokens := []string{typeName(sd.Args), typeName(dd.Args), path.Base(schedPkg) + ".Name", path.Base(deschedPkg) + ".Name"}
			touched, touchedPkgs := goFiles(t, "../../..", func(file string) bool {
				dir := module + filepath.ToSlash(filepath.Dir(file))
				if dir == schedPkg || dir == deschedPkg {
					return true
				}
				data, err := os.ReadFile(filepath.Join("../../..", file))
				if err != nil {
					t.Fatal(err)
				}
				for _, tok := range tokens {
					if strings.Contains(string(data), tok) {
						return true
					}
				}
				return false
			})
			t.Logf("in-tree rule %s + %s: %d hand-written files in %d packages (plus the chart): %v", sd.Name, dd.Name, len(touched), len(touchedPkgs), touched)
			if len(touched) > inTreeCeiling.files || len(touchedPkgs) > inTreeCeiling.packages {
				t.Errorf("in-tree rule %s + %s touches %d files in %d packages, more than the %d in %d it took when this test was written",
					sd.Name, dd.Name, len(touched), len(touchedPkgs), inTreeCeiling.files, inTreeCeiling.packages)
			}
		}
	}
	if rules < 2 {
		t.Errorf("found %d in-tree rules both binaries enforce; expected NodeCRDResourceFit and LoadAware at least", rules)
	}
}

// inTreeListPackages is the most packages the in-tree checklist may list. The goal is 4; the list
// has 5 because the two binaries' plugin lists are two packages (accord-scheduler never imports
// the descheduler), each getting one line: the rule's shared args and scheduler args type
// (pkg/constraints), its two plugins, and those two lines.
const inTreeListPackages = 5

// checklistFiles reads the in-tree checklist of pkg/descheduler/README.md: the first code span of
// each item of the numbered list after "An in-tree rule takes the same steps".
func checklistFiles(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../../../pkg/descheduler/README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\nAn in-tree rule takes the same steps")
	if !ok {
		t.Fatal(`pkg/descheduler/README.md has no paragraph "An in-tree rule takes the same steps"`)
	}
	var out []string
	started := false
	for _, line := range strings.Split(section, "\n") {
		num, rest, isItem := strings.Cut(line, ". `")
		if _, err := strconv.Atoi(num); err != nil || !isItem {
			if started && line == "" {
				break
			}
			continue
		}
		started = true
		file, _, _ := strings.Cut(rest, "`")
		out = append(out, file)
	}
	return out
}

// inTreeCeiling is the most files and packages one of the rules Accord has touches. When
// TestChecklistFiles was written: NodeCRDResourceFit with DefaultEvictor, which follows its
// missingCRPolicy, 20 files in 9 packages; NodeCRDResourceFit with its descheduler plugin 17 in 8;
// LoadAware with LowNodeLoad 18 in 9. Since the shared args are one struct in pkg/constraints
// (constraints.UsageEstimateArgs, embedded in apis/config's and the descheduler's args) and
// following is one generic function over Following data (framework.FollowShared; no follow.go
// per plugin): 19 in 8, 16 in 7 and 16 in 8. These rules keep apis/config's per-plugin files
// (types, registration, v1 defaults, validation); a new rule takes the in-tree checklist's shape.
var inTreeCeiling = struct{ files, packages int }{files: 19, packages: 8}

const module = "github.com/accord-sched/accord/"

// exampleMayImport are the packages of Accord's the example rule uses: the binaries' commands and
// options and the descheduler's plugin API.
var exampleMayImport = map[string]bool{
	module + "pkg/descheduler/app":       true,
	module + "pkg/descheduler/framework": true,
	module + "pkg/scheduler/server":      true,
}

// goFiles lists the hand-written Go files (no tests, no generated code) under root, relative to it,
// for which keep holds, and their packages (folders). Under the module root it looks in apis, pkg
// and cmd.
func goFiles(t *testing.T, root string, keep func(file string) bool) (files []string, pkgs map[string]bool) {
	t.Helper()
	pkgs = map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			// Test support (fakes, plugintest) is no part of a rule.
			if d.Name() == "testdata" || d.Name() == "fake" || strings.HasSuffix(d.Name(), "test") || rel == "pkg/generated" || (root != "." && strings.Count(rel, "/") == 0 && rel != "." && rel != "apis" && rel != "pkg" && rel != "cmd") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || strings.HasPrefix(d.Name(), "zz_generated") || !keep(rel) {
			return nil
		}
		files = append(files, rel)
		pkgs[filepath.Dir(rel)] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files, pkgs
}

// importsOf returns the import paths of a Go file.
func importsOf(file string) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// funcPackage is the import path of the package that declares the function f.
func funcPackage(f any) string {
	name := goruntime.FuncForPC(reflect.ValueOf(f).Pointer()).Name()
	slash := strings.LastIndex(name, "/")
	if dot := strings.Index(name[slash+1:], "."); dot >= 0 {
		return name[:slash+1+dot]
	}
	return name
}

// typeName is the name of the struct type obj points to.
func typeName(obj any) string { return reflect.TypeOf(obj).Elem().Name() }

const schedulerConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: accord-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: MaxLabeledPerNode
  pluginConfig:
  - name: MaxLabeledPerNode
    args:
      maxPerNode: 1
`

const policyHead = `apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: limited
  plugins:
    deschedule:
      enabled: [MaxLabeledPerNode]
`

// TestRuleEndToEnd: the scheduler configuration sets maxPerNode 1; the policy, loaded the way
// accord-descheduler loads it with --scheduler-config-file and the example's options, follows it
// (and is refused when it says otherwise); the SchedulerSimulation those options give builds the
// scheduler's profile with the rule's plugin (without WithSchedulerPlugin it cannot: the plugin
// does not exist for it); the scheduler plugin, built from the scheduler's own decoding of the
// file, refuses a second labelled pod on a node, and the descheduler plugin evicts the younger of
// two. test/integration/descheduler's TestSharedRuleExampleSimulated runs the example's binary.
func TestRuleEndToEnd(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	schedFile := write("scheduler.yaml", schedulerConfig)

	// The descheduler follows the scheduler's args.
	p, reg, err := runner.LoadPolicy(write("policy.yaml", policyHead), schedFile, deschedulerOptions...)
	if err != nil {
		t.Fatal(err)
	}
	var args *descheduler.MaxLabeledPerNodeArgs
	for _, pc := range p.Profiles[0].PluginConfigs {
		if a, ok := pc.Args.(*descheduler.MaxLabeledPerNodeArgs); ok {
			args = a
		}
	}
	if args == nil || args.MaxPerNode != 1 || args.LabelKey != "example.accord.dev/limited" {
		t.Fatalf("policy args %+v, want the scheduler's maxPerNode 1 and the default labelKey", args)
	}
	_, _, err = runner.LoadPolicy(write("contradicting.yaml", policyHead+"  pluginConfig:\n  - name: MaxLabeledPerNode\n    args: {maxPerNode: 3}\n"), schedFile, deschedulerOptions...)
	if err == nil || !strings.Contains(err.Error(), "profiles[0].pluginConfig[0].args.maxPerNode") || !strings.Contains(err.Error(), "profiles[0].pluginConfig[0].args.maxPerNode: Invalid value: 3: contradicts") {
		t.Fatalf("a contradicting policy: %v, want an error naming both maxPerNode paths", err)
	}

	// The scheduler plugin, with the args kube-scheduler decodes from the same file.
	cfg, err := simulator.LoadConfig(schedFile)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := scheduler.New(ctx, cfg.Profiles[0].PluginConfig[0].Args, nil)
	if err != nil {
		t.Fatal(err)
	}
	node := fake.Node("n1", nil, 4, 8)
	older, younger := labelled("older", time.Hour), labelled("younger", time.Minute)
	ni := schedframework.NewNodeInfo()
	ni.SetNode(node)
	if st := sp.(fwk.FilterPlugin).Filter(ctx, schedframework.NewCycleState(), older, ni); !st.IsSuccess() {
		t.Fatalf("the first labelled pod on an empty node: %v", st)
	}
	ni.AddPod(older)
	if st := sp.(fwk.FilterPlugin).Filter(ctx, schedframework.NewCycleState(), younger, ni); st.Code() != fwk.Unschedulable {
		t.Fatalf("a second labelled pod: %v, want Unschedulable", st)
	}

	// The descheduler plugin, with the followed args, on a node holding both.
	cluster := fake.NewCluster(node, older, younger)
	h, err := fake.NewHandle(cluster)
	if err != nil {
		t.Fatal(err)
	}

	// SchedulerSimulation, on by default, builds the scheduler's profile with the rule's plugin.
	var simArgs *schedulersimulation.SchedulerSimulationArgs
	for _, pc := range p.Profiles[0].PluginConfigs {
		if a, ok := pc.Args.(*schedulersimulation.SchedulerSimulationArgs); ok {
			simArgs = a
		}
	}
	if simArgs == nil || simArgs.SchedulerConfigFile != schedFile {
		t.Fatalf("SchedulerSimulation args %+v, want the policy's default with the scheduler's configuration", simArgs)
	}
	sim, err := reg[schedulersimulation.Name](ctx, simArgs, h)
	if err != nil {
		t.Fatalf("SchedulerSimulation with the example's options: %v", err)
	}
	_ = sim.(io.Closer).Close()
	_, plainReg, err := runner.LoadPolicy(write("plain.yaml", policyHead), schedFile, deschedulerOptions[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plainReg[schedulersimulation.Name](ctx, simArgs, h); err == nil || !strings.Contains(err.Error(), `"MaxLabeledPerNode" does not exist`) {
		t.Fatalf("SchedulerSimulation without WithSchedulerPlugin: %v, want the rule's plugin unknown", err)
	}
	ev := &recordingEvictor{}
	h.Evict = ev
	cluster.Start(t)
	dp, err := descheduler.New(ctx, args, h)
	if err != nil {
		t.Fatal(err)
	}
	if st := dp.(framework.DeschedulePlugin).Deschedule(ctx, []*corev1.Node{node}); st != nil && st.Err != nil {
		t.Fatal(st.Err)
	}
	if len(ev.evicted) != 1 || ev.evicted[0] != "younger" {
		t.Fatalf("evicted %v, want [younger]", ev.evicted)
	}
}

func labelled(name string, age time.Duration) *corev1.Pod {
	p := fake.Pod("ns", name, "n1", 100)
	p.Labels = map[string]string{"example.accord.dev/limited": "true"}
	p.CreationTimestamp = metav1.NewTime(time.Now().Add(-age))
	return p
}

// recordingEvictor lets every pod go and records the evictions.
type recordingEvictor struct{ evicted []string }

func (e *recordingEvictor) Filter(*corev1.Pod) bool            { return true }
func (e *recordingEvictor) PreEvictionFilter(*corev1.Pod) bool { return true }
func (e *recordingEvictor) CheckLimits(*corev1.Pod) error      { return nil }
func (*recordingEvictor) ExplainPreEviction(*corev1.Pod) framework.PreEvictionExplanation {
	return framework.PreEvictionExplanation{}
}
func (e *recordingEvictor) Evict(_ context.Context, pod *corev1.Pod, _ framework.EvictOptions) error {
	e.evicted = append(e.evicted, pod.Name)
	return nil
}

// CapRule stands for an in-tree rule's shared args in pkg/constraints (checklist item 1): one
// struct with JSON names, defaults and validation, which both sides embed.
type CapRule struct {
	LabelKey   string `json:"labelKey,omitempty"`
	MaxPerNode int32  `json:"maxPerNode,omitempty"`
}

func (r *CapRule) SetDefaults() {
	if r.LabelKey == "" {
		r.LabelKey = "example.accord.dev/capped"
	}
	if r.MaxPerNode == 0 {
		r.MaxPerNode = 2
	}
}

func (r *CapRule) Validate(path *field.Path) field.ErrorList {
	if r.MaxPerNode < 1 {
		return field.ErrorList{field.Invalid(path.Child("maxPerNode"), r.MaxPerNode, "must be at least 1")}
	}
	return nil
}

// CapRuleArgs stand for the rule's scheduler args type beside it (item 1): TypeMeta and the shared
// struct, registered with kube-scheduler's scheme by schedplugins.RegisterArgs (item 3).
type CapRuleArgs struct {
	metav1.TypeMeta `json:",inline"`
	CapRule         `json:",inline"`
}

func (a *CapRuleArgs) DeepCopyObject() runtime.Object { c := *a; return &c }

// capFollowing stands for the rule's constraints.Following (item 1).
var capFollowing = constraints.Following{
	Scheduler: "CapRule",
	Fields:    []constraints.FollowedField{{Scheduler: "labelKey"}, {Scheduler: "maxPerNode"}},
}

// CapRuleDeschedulerArgs stand for the descheduler plugin's args (item 4): the shared struct
// inline and the two follower methods.
type CapRuleDeschedulerArgs struct {
	metav1.TypeMeta `json:",inline"`
	CapRule         `json:",inline"`
}

func (a *CapRuleDeschedulerArgs) DeepCopyObject() runtime.Object { c := *a; return &c }
func (a *CapRuleDeschedulerArgs) FollowsScheduler() []string     { return []string{capFollowing.Scheduler} }
func (a *CapRuleDeschedulerArgs) FollowScheduler(f *framework.Follow) field.ErrorList {
	return framework.FollowShared(f, a, capFollowing, nil)
}

// capFilter is the rule's scheduler plugin (item 2): it counts the labelled pods of a node.
type capFilter struct{ args *CapRuleArgs }

func (p *capFilter) Name() string { return capFollowing.Scheduler }
func (p *capFilter) Filter(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, ni fwk.NodeInfo) *fwk.Status {
	if pod.Labels[p.args.LabelKey] != "true" {
		return nil
	}
	n := 0
	for _, pi := range ni.GetPods() {
		if pi.GetPod().Labels[p.args.LabelKey] == "true" {
			n++
		}
	}
	if n >= int(p.args.MaxPerNode) {
		return fwk.NewStatus(fwk.Unschedulable, "node full under CapRule")
	}
	return nil
}

// TestInTreeShapedRule builds a rule in the in-tree checklist's shape (pkg/descheduler/README.md):
// one shared args struct, the scheduler's args type beside it registered with
// schedplugins.RegisterArgs (nothing in apis/config), the descheduler's args embedding the same
// struct and following with framework.FollowShared. The scheduler configuration then decodes the
// rule's args into that type, defaulted, as accord-scheduler's --config does; the scheduler plugin
// gets them typed; the policy follows them and is refused when it contradicts them; and
// SchedulerSimulation builds the scheduler's profile with the rule's plugin. The two list lines
// (items 3 and 5) are the registrations this test makes with RegisterArgs and the options.
func TestInTreeShapedRule(t *testing.T) {
	ctx := context.Background()
	if err := schedplugins.RegisterArgs([]schedplugins.Descriptor{{Name: capFollowing.Scheduler, Args: &CapRuleArgs{}}}); err != nil {
		t.Fatal(err)
	}
	schedNew := func(_ context.Context, obj runtime.Object, _ fwk.Handle) (fwk.Plugin, error) {
		args, ok := obj.(*CapRuleArgs)
		if !ok {
			return nil, fmt.Errorf("CapRule args of type %T", obj)
		}
		if errs := args.Validate(field.NewPath("args")); len(errs) > 0 {
			return nil, errs.ToAggregate()
		}
		return &capFilter{args: args}, nil
	}
	deschedNew := func(_ context.Context, obj runtime.Object, _ framework.Handle) (framework.Plugin, error) {
		return nil, fmt.Errorf("not built in this test (args %T)", obj)
	}
	options := []runner.Option{
		runner.WithPlugin(capFollowing.Scheduler, deschedNew, &CapRuleDeschedulerArgs{}),
		runner.WithSchedulerPlugin(capFollowing.Scheduler, schedNew),
	}

	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	schedFile := write("scheduler.yaml", strings.ReplaceAll(schedulerConfig, "MaxLabeledPerNode", "CapRule"))
	cfg, err := simulator.LoadConfig(schedFile)
	if err != nil {
		t.Fatal(err)
	}
	var schedArgs *CapRuleArgs
	for _, pc := range cfg.Profiles[0].PluginConfig {
		if pc.Name == capFollowing.Scheduler {
			schedArgs, _ = pc.Args.(*CapRuleArgs)
		}
	}
	if schedArgs == nil || schedArgs.MaxPerNode != 1 || schedArgs.LabelKey != "example.accord.dev/capped" {
		t.Fatalf("scheduler args %+v, want *CapRuleArgs with maxPerNode 1 and the default labelKey", schedArgs)
	}
	sp, err := schedNew(ctx, schedArgs, nil)
	if err != nil {
		t.Fatal(err)
	}
	node := fake.Node("n1", nil, 4, 8)
	ni := schedframework.NewNodeInfo()
	ni.SetNode(node)
	first, second := labelled("first", time.Hour), labelled("second", time.Minute)
	first.Labels = map[string]string{"example.accord.dev/capped": "true"}
	second.Labels = first.Labels
	ni.AddPod(first)
	if st := sp.(fwk.FilterPlugin).Filter(ctx, schedframework.NewCycleState(), second, ni); st.Code() != fwk.Unschedulable {
		t.Fatalf("a second capped pod: %v, want Unschedulable", st)
	}

	head := strings.ReplaceAll(policyHead, "MaxLabeledPerNode", "CapRule")
	p, reg, err := runner.LoadPolicy(write("policy.yaml", head), schedFile, options...)
	if err != nil {
		t.Fatal(err)
	}
	var args *CapRuleDeschedulerArgs
	var simArgs *schedulersimulation.SchedulerSimulationArgs
	for _, pc := range p.Profiles[0].PluginConfigs {
		switch a := pc.Args.(type) {
		case *CapRuleDeschedulerArgs:
			args = a
		case *schedulersimulation.SchedulerSimulationArgs:
			simArgs = a
		}
	}
	if args == nil || args.MaxPerNode != 1 || args.LabelKey != "example.accord.dev/capped" {
		t.Fatalf("policy args %+v, want the scheduler's maxPerNode 1 and the default labelKey", args)
	}
	_, _, err = runner.LoadPolicy(write("contradicting.yaml", head+"  pluginConfig:\n  - name: CapRule\n    args: {maxPerNode: 3}\n"), schedFile, options...)
	if err == nil || !strings.Contains(err.Error(), "profiles[0].pluginConfig[0].args.maxPerNode: Invalid value: 3: contradicts") {
		t.Fatalf("a contradicting policy: %v, want an error naming both maxPerNode paths", err)
	}

	h, err := fake.NewHandle(fake.NewCluster(node, first))
	if err != nil {
		t.Fatal(err)
	}
	if simArgs == nil {
		t.Fatal("the policy has no SchedulerSimulation args")
	}
	sim, err := reg[schedulersimulation.Name](ctx, simArgs, h)
	if err != nil {
		t.Fatalf("SchedulerSimulation with the rule's scheduler plugin: %v", err)
	}
	_ = sim.(io.Closer).Close()
}

// TestSchedulerArgsDecodedStrictly: the scheduler's args of the example rule reach both binaries as
// *runtime.Unknown; both decode them with maxlabeled.Decode, strictly, so a misspelt field stops
// the scheduler plugin and the descheduler's following alike, naming it.
func TestSchedulerArgsDecodedStrictly(t *testing.T) {
	dir := t.TempDir()
	schedFile := filepath.Join(dir, "scheduler.yaml")
	policyFile := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(schedFile, []byte(strings.Replace(schedulerConfig, "maxPerNode: 1", "maxPerNode: 1\n      maxPerNod: 2", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(policyFile, []byte(policyHead), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := simulator.LoadConfig(schedFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scheduler.New(context.Background(), cfg.Profiles[0].PluginConfig[0].Args, nil); err == nil || !strings.Contains(err.Error(), `unknown field "maxPerNod"`) {
		t.Errorf("the scheduler plugin: %v, want an error naming maxPerNod", err)
	}
	if _, _, err := runner.LoadPolicy(policyFile, schedFile, deschedulerOptions...); err == nil || !strings.Contains(err.Error(), `unknown field "maxPerNod"`) || !strings.Contains(err.Error(), "profiles[0].pluginConfig[0].args") {
		t.Errorf("the descheduler's following: %v, want an error naming maxPerNod and the scheduler's args", err)
	}
}
