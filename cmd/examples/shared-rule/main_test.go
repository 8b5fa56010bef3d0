package main

import (
	"context"
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
	fwk "k8s.io/kube-scheduler/framework"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/accord-sched/accord/cmd/examples/shared-rule/maxlabeled/descheduler"
	"github.com/accord-sched/accord/cmd/examples/shared-rule/maxlabeled/scheduler"
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
// The in-tree shape is measured on the rules Accord has: each scheduler plugin of
// accord-scheduler's descriptor list whose args an in-tree descheduler plugin follows, with that
// descheduler plugin. A rule touches the hand-written Go files (no tests, no generated code) of its
// two plugin packages and every other hand-written Go file of the module (test support aside) that
// names one of their args types or Name constants (args types, defaults, validation, registration,
// following, readers of the args). The counts may not grow past inTreeCeiling.
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

// inTreeCeiling is the most files and packages an in-tree rule touches. When TestChecklistFiles
// was written: NodeCRDResourceFit with DefaultEvictor, which follows its missingCRPolicy, 20 files
// in 9 packages; NodeCRDResourceFit with its descheduler plugin 17 in 8; LoadAware with LowNodeLoad
// 18 in 9. Since the shared args are one struct in pkg/constraints (constraints.UsageEstimateArgs,
// embedded in apis/config's and the descheduler's args) and following is one generic function over
// Following data (framework.FollowShared; no follow.go per plugin): 19 in 8, 16 in 7 and 16 in 8.
// The shared struct and its Following sit in pkg/constraints beside the rule's verdicts, which
// neither count includes. The checklist's goal for an in-tree rule is 8 files in 4 packages; what
// remains is apis/config's per-plugin files (types, registration, v1 defaults, validation) and the
// two registries.
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
