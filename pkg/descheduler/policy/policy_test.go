package policy_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/accord-sched/accord/apis/descheduler"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/defaultevictor"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/schedulersimulation"
	"github.com/accord-sched/accord/pkg/descheduler/policy"
)

type recording struct{ name string }

func (r *recording) Name() string { return r.name }
func (r *recording) Deschedule(context.Context, []*corev1.Node) *framework.Status {
	return nil
}
func (r *recording) Balance(context.Context, []*corev1.Node) *framework.Status { return nil }

// testArgs is an out-of-tree args type with defaults and validation.
type testArgs struct {
	metav1.TypeMeta `json:",inline"`
	Threshold       int32 `json:"threshold,omitempty"`
}

func (a *testArgs) DeepCopyObject() runtime.Object { c := *a; return &c }
func (a *testArgs) SetDefaults() {
	if a.Threshold == 0 {
		a.Threshold = 7
	}
}
func (a *testArgs) Validate(path *field.Path) field.ErrorList {
	if a.Threshold > 100 {
		return field.ErrorList{field.Invalid(path.Child("threshold"), a.Threshold, "must be at most 100")}
	}
	return nil
}

func registries(t *testing.T) (framework.Registry, framework.ArgsTypes) {
	t.Helper()
	reg := plugins.NewInTreeRegistry()
	args := plugins.NewInTreeArgs()
	for _, name := range []string{"RecordingDeschedule", "RecordingBalance"} {
		if err := reg.Register(name, func(context.Context, runtime.Object, framework.Handle) (framework.Plugin, error) {
			return &recording{name: name}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := args.Register("RecordingDeschedule", &testArgs{}); err != nil {
		t.Fatal(err)
	}
	return reg, args
}

func decode(t *testing.T, doc string) *descheduler.DeschedulerPolicy {
	t.Helper()
	_, args := registries(t)
	p, err := policy.Decode([]byte(doc), args)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return p
}

func TestUpstreamPolicyEveryField(t *testing.T) {
	reg, args := registries(t)
	p, err := policy.Load("testdata/upstream-full.yaml", reg, args)
	if err != nil {
		t.Fatal(err)
	}
	if *p.NodeSelector != "node-role.kubernetes.io/worker=true,zone!=edge" || *p.MaxNoOfPodsToEvictPerNode != 5 ||
		*p.MaxNoOfPodsToEvictPerNamespace != 10 || *p.MaxNoOfPodsToEvictTotal != 40 || *p.GracePeriodSeconds != 30 ||
		!*p.EvictionFailureEventNotification {
		t.Errorf("policy-level fields not decoded: %+v", p)
	}
	if len(p.Profiles) != 3 || p.Profiles[0].Name != "ProfileName" || p.Profiles[1].Name != "second" || p.Profiles[2].Name != "protections" {
		t.Fatalf("profiles: %+v", p.Profiles)
	}
	prof := p.Profiles[0]
	if got := policy.Enabled(&prof.Plugins, policy.Balance); len(got) != 1 || got[0] != "RecordingBalance" {
		t.Errorf("balance enabled = %v", got)
	}
	if prof.Plugins.Balance.Disabled[0] != "RecordingDeschedule" {
		t.Errorf("balance disabled = %v", prof.Plugins.Balance.Disabled)
	}
	if got := policy.Enabled(&prof.Plugins, policy.Evict); len(got) != 1 || got[0] != "EvictionAPI" {
		t.Errorf("evict defaulted to %v", got)
	}
	var de *defaultevictor.DefaultEvictorArgs
	var ta *testArgs
	for _, pc := range prof.PluginConfigs {
		switch a := pc.Args.(type) {
		case *defaultevictor.DefaultEvictorArgs:
			de = a
		case *testArgs:
			ta = a
		}
	}
	if de == nil || ta == nil {
		t.Fatalf("args not decoded into registered types: %+v", prof.PluginConfigs)
	}
	want := defaultevictor.DefaultEvictorArgs{
		NodeSelector: "pool=general", EvictLocalStoragePods: true, IgnorePvcPods: true, EvictFailedBarePods: true,
		NodeFit: true, MinReplicas: 2, MinPodAge: &metav1.Duration{Duration: 5 * time.Minute},
		NoEvictionPolicy:  defaultevictor.MandatoryNoEvictionPolicy,
		PriorityThreshold: &defaultevictor.PriorityThreshold{Value: ptr.To[int32](100000)},
	}
	if de.NodeSelector != want.NodeSelector || !de.EvictLocalStoragePods || !de.IgnorePvcPods || !de.EvictFailedBarePods ||
		!de.NodeFit || de.MinReplicas != 2 || de.MinPodAge.Duration != 5*time.Minute || de.NoEvictionPolicy != want.NoEvictionPolicy ||
		*de.PriorityThreshold.Value != 100000 || de.LabelSelector.MatchLabels["app"] != "web" ||
		de.LabelSelector.MatchExpressions[0].Values[0] != "frontend" {
		t.Errorf("DefaultEvictor args = %+v", de)
	}
	for _, pc := range p.Profiles[2].PluginConfigs {
		if a, ok := pc.Args.(*defaultevictor.DefaultEvictorArgs); ok {
			pp := a.PodProtections
			if a.NamespaceLabelSelector.MatchLabels["team"] != "payments" || pp.DefaultDisabled[0] != "DaemonSetPods" ||
				len(pp.ExtraEnabled) != 3 || pp.ExtraEnabled[1] != defaultevictor.PodsWithResourceClaims ||
				pp.Config.PodsWithPVC.ProtectedStorageClasses[0].Name != "local-path" {
				t.Errorf("protections profile's DefaultEvictor args = %+v", a)
			}
		}
	}
	if ta.Threshold != 7 {
		t.Errorf("args defaulting not applied: threshold = %d", ta.Threshold)
	}
	// The second profile named no evictor: DefaultEvictor is added, with default args, and
	// SchedulerSimulation after it at preEvictionFilter.
	second := p.Profiles[1]
	if f, pf := policy.Enabled(&second.Plugins, policy.Filter), policy.Enabled(&second.Plugins, policy.PreEvictionFilter); len(f) != 1 || f[0] != "DefaultEvictor" || len(pf) != 2 || pf[0] != "DefaultEvictor" || pf[1] != "SchedulerSimulation" {
		t.Errorf("DefaultEvictor not defaulted: filter %v preEvictionFilter %v", f, pf)
	}
	if len(second.PluginConfigs) != 2 || second.PluginConfigs[0].Args.(*defaultevictor.DefaultEvictorArgs).PriorityThreshold == nil {
		t.Errorf("default DefaultEvictor args missing: %+v", second.PluginConfigs)
	} else if ss, ok := second.PluginConfigs[1].Args.(*schedulersimulation.SchedulerSimulationArgs); !ok || ss.FlapWindow == nil {
		t.Errorf("default SchedulerSimulation args missing: %+v", second.PluginConfigs[1])
	}
}

func TestTypoNamesTheField(t *testing.T) {
	reg, args := registries(t)
	_, err := policy.Load("testdata/upstream-typo.yaml", reg, args)
	if err == nil || !strings.Contains(err.Error(), `unknown field "profiles[0].plugins.balance.enabeld"`) {
		t.Fatalf("want an error naming the typo'd field, got %v", err)
	}
}

func TestStrictPluginArgs(t *testing.T) {
	_, args := registries(t)
	_, err := policy.Decode([]byte(`
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: p
  pluginConfig:
  - name: DefaultEvictor
    args:
      nodeFitt: true
  plugins:
    filter: {enabled: [DefaultEvictor]}
`), args)
	if err == nil || !strings.Contains(err.Error(), "profiles[0].pluginConfig[0].args") || !strings.Contains(err.Error(), `unknown field "nodeFitt"`) {
		t.Fatalf("want an error naming the unknown args field with its path, got %v", err)
	}
	_, err = policy.Decode([]byte(`
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: p
  pluginConfig:
  - name: DefaultEvictor
    args:
      apiVersion: descheduler/v1alpha2
      kind: testArgs
  plugins:
    filter: {enabled: [DefaultEvictor]}
`), args)
	if err == nil || !strings.Contains(err.Error(), "profiles[0].pluginConfig[0].args.kind") {
		t.Fatalf("want an args kind mismatch, got %v", err)
	}
}

func TestDecodeNamesTheLegacyVersion(t *testing.T) {
	_, args := registries(t)
	_, err := policy.Decode([]byte("apiVersion: descheduler/v1alpha1\nkind: DeschedulerPolicy\nstrategies:\n  RemoveDuplicates: {enabled: true}\n"), args)
	if err == nil || !strings.Contains(err.Error(), "apiVersion: descheduler/v1alpha1 is not supported") || !strings.Contains(err.Error(), "descheduler/v1alpha2") {
		t.Fatalf("v1alpha1 policy: got %v, want an error naming both versions", err)
	}
}

func TestDecodeRejectsOtherVersions(t *testing.T) {
	_, args := registries(t)
	for _, doc := range []string{
		"apiVersion: descheduler/v1alpha1\nkind: DeschedulerPolicy\n",
		"apiVersion: descheduler/v1alpha2\nkind: Policy\n",
		"profiles: []\n",
	} {
		if _, err := policy.Decode([]byte(doc), args); err == nil {
			t.Errorf("decoding %q: want an error", doc)
		}
	}
}

func TestDefaultEvictorNotAddedWhenNamedOrDisabled(t *testing.T) {
	p := decode(t, `
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: named
  plugins:
    preEvictionFilter: {enabled: [DefaultEvictor]}
- name: disabled
  plugins:
    filter: {disabled: [DefaultEvictor]}
    preEvictionFilter: {disabled: [DefaultEvictor]}
    evict: {enabled: [EvictionAPI]}
`)
	if f := policy.Enabled(&p.Profiles[0].Plugins, policy.Filter); len(f) != 0 {
		t.Errorf("profile naming an evictor got filter %v", f)
	}
	if f := policy.Enabled(&p.Profiles[1].Plugins, policy.Filter); len(f) != 0 {
		t.Errorf("profile disabling DefaultEvictor got filter %v", f)
	}
	if e := p.Profiles[1].Plugins.Evict.Enabled; len(e) != 1 {
		t.Errorf("explicit evict plugin duplicated: %v", e)
	}
	// Naming the evictor keeps the no-flap guarantee: SchedulerSimulation still runs after it.
	if pf := policy.Enabled(&p.Profiles[0].Plugins, policy.PreEvictionFilter); !slices.Equal(pf, []string{"DefaultEvictor", "SchedulerSimulation"}) {
		t.Errorf("profile naming its evictors got preEvictionFilter %v", pf)
	}
}

// An upstream policy lists DefaultEvictor at filter and preEvictionFilter itself; SchedulerSimulation
// stays on for it and is turned off only by disabling it (by name or with "*"), and a profile that
// places it itself keeps it once, where it put it.
func TestSchedulerSimulationStaysOnUnlessDisabled(t *testing.T) {
	p := decode(t, `
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: upstream
  plugins:
    filter: {enabled: [DefaultEvictor]}
    preEvictionFilter: {enabled: [DefaultEvictor]}
    deschedule: {enabled: [RemovePodsViolatingNodeTaints]}
- name: by-name
  plugins:
    preEvictionFilter: {enabled: [DefaultEvictor], disabled: [SchedulerSimulation]}
- name: star
  plugins:
    filter: {enabled: [DefaultEvictor]}
    preEvictionFilter: {enabled: [DefaultEvictor], disabled: ["*"]}
- name: placed
  plugins:
    preEvictionFilter: {enabled: [SchedulerSimulation, DefaultEvictor]}
`)
	want := map[string][]string{
		"upstream": {"DefaultEvictor", "SchedulerSimulation"},
		"by-name":  {"DefaultEvictor"},
		"star":     {"DefaultEvictor"},
		"placed":   {"SchedulerSimulation", "DefaultEvictor"},
	}
	for i := range p.Profiles {
		got := policy.Enabled(&p.Profiles[i].Plugins, policy.PreEvictionFilter)
		if w := want[p.Profiles[i].Name]; !slices.Equal(got, w) {
			t.Errorf("profile %s: preEvictionFilter %v, want %v", p.Profiles[i].Name, got, w)
		}
	}
}

func TestSchedulerSimulationOptOut(t *testing.T) {
	p := decode(t, `
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: optout
  plugins:
    preEvictionFilter: {disabled: [SchedulerSimulation]}
`)
	if pf := policy.Enabled(&p.Profiles[0].Plugins, policy.PreEvictionFilter); len(pf) != 1 || pf[0] != "DefaultEvictor" {
		t.Errorf("opted-out profile got preEvictionFilter %v", pf)
	}
	if len(p.Profiles[0].PluginConfigs) != 1 {
		t.Errorf("opted-out profile got args %+v", p.Profiles[0].PluginConfigs)
	}
}

func TestValidationErrors(t *testing.T) {
	reg, args := registries(t)
	cases := map[string]struct {
		doc  string
		want []string // "type path" of each expected error
	}{
		"unknown plugin": {`
profiles:
- name: p
  plugins:
    deschedule: {enabled: [Nope], disabled: [AlsoNope]}`,
			[]string{"FieldValueNotFound profiles[0].plugins.deschedule.enabled[0]", "FieldValueNotFound profiles[0].plugins.deschedule.disabled[0]"}},
		"duplicate profile names": {`
profiles:
- name: p
- name: p`, []string{"FieldValueDuplicate profiles[1].name"}},
		"missing profile name and profiles": {`
profiles:
- plugins: {}`, []string{"FieldValueRequired profiles[0].name"}},
		"no profiles": {``, []string{"FieldValueRequired profiles"}},
		"negative limits": {`
maxNoOfPodsToEvictPerNode: -1
maxNoOfPodsToEvictPerNamespace: -2
maxNoOfPodsToEvictTotal: -3
gracePeriodSeconds: -4
profiles: [{name: p}]`, []string{"FieldValueInvalid maxNoOfPodsToEvictPerNode", "FieldValueInvalid maxNoOfPodsToEvictPerNamespace",
			"FieldValueInvalid maxNoOfPodsToEvictTotal", "FieldValueInvalid gracePeriodSeconds"}},
		"bad selectors": {`
nodeSelector: "a in (b"
profiles: [{name: p, nodeSelector: "=x"}]`, []string{"FieldValueInvalid nodeSelector", "FieldValueInvalid profiles[0].nodeSelector"}},
		"args for a plugin not enabled are accepted but still validated (as upstream)": {`
profiles:
- name: p
  pluginConfig:
  - name: RecordingDeschedule
    args: {threshold: 300}`, []string{"FieldValueInvalid profiles[0].pluginConfig[0].args.threshold"}},
		"args for an unknown plugin": {`
profiles:
- name: p
  pluginConfig:
  - name: Ghost`, []string{"FieldValueNotFound profiles[0].pluginConfig[0].name"}},
		"args for a plugin without args": {`
profiles:
- name: p
  pluginConfig:
  - name: RecordingBalance
    args: {x: 1}
  plugins:
    balance: {enabled: [RecordingBalance]}`, []string{"FieldValueInvalid profiles[0].pluginConfig[0].args"}},
		"duplicate pluginConfig": {`
profiles:
- name: p
  pluginConfig:
  - name: RecordingDeschedule
  - name: RecordingDeschedule
  plugins:
    deschedule: {enabled: [RecordingDeschedule]}`, []string{"FieldValueDuplicate profiles[0].pluginConfig[1].name"}},
		"plugin args validator": {`
profiles:
- name: p
  pluginConfig:
  - name: RecordingDeschedule
    args: {threshold: 101}
  - name: DefaultEvictor
    args:
      minReplicas: -1
      noEvictionPolicy: Sometimes
      priorityThreshold: {name: high, value: 3}
      podProtections: {defaultDisabled: [PodsWithoutPDB], extraEnabled: [DaemonSetPods]}
      labelSelector: {matchExpressions: [{key: a, operator: Bogus}]}
      nodeSelector: "=="
      minPodAge: -1s
  plugins:
    deschedule: {enabled: [RecordingDeschedule]}`, []string{
			"FieldValueInvalid profiles[0].pluginConfig[0].args.threshold",
			"FieldValueInvalid profiles[0].pluginConfig[1].args.nodeSelector",
			"FieldValueInvalid profiles[0].pluginConfig[1].args.labelSelector.matchExpressions[0].operator",
			"FieldValueInvalid profiles[0].pluginConfig[1].args.priorityThreshold",
			"FieldValueInvalid profiles[0].pluginConfig[1].args.minReplicas",
			"FieldValueInvalid profiles[0].pluginConfig[1].args.minPodAge",
			"FieldValueNotSupported profiles[0].pluginConfig[1].args.noEvictionPolicy",
			"FieldValueNotSupported profiles[0].pluginConfig[1].args.podProtections.defaultDisabled[0]",
			"FieldValueNotSupported profiles[0].pluginConfig[1].args.podProtections.extraEnabled[0]",
		}},
		"duplicate enabled and two evict plugins": {`
profiles:
- name: p
  plugins:
    balance: {enabled: [RecordingBalance, RecordingBalance]}
    evict: {enabled: [EvictionAPI, DefaultEvictor]}`, []string{"FieldValueDuplicate profiles[0].plugins.balance.enabled[1]", "FieldValueTooMany profiles[0].plugins.evict.enabled"}},
		"empty plugin name": {`
profiles:
- name: p
  plugins:
    balance: {enabled: [""]}`, []string{"FieldValueRequired profiles[0].plugins.balance.enabled[0]"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := policy.Decode([]byte("apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n"+tc.doc), args)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			errs := policy.Validate(p, reg, args)
			var got []string
			for _, e := range errs {
				got = append(got, string(e.Type)+" "+e.Field)
			}
			for _, w := range tc.want {
				found := false
				for _, g := range got {
					found = found || g == w
				}
				if !found {
					t.Errorf("missing error %q; got %q", w, got)
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("got %d errors %q, want %d", len(got), got, len(tc.want))
			}
		})
	}
}

func TestValidPolicyHasNoErrors(t *testing.T) {
	reg, args := registries(t)
	for _, f := range []string{"testdata/upstream-full.yaml"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p, err := policy.Decode(data, args)
		if err != nil {
			t.Fatal(err)
		}
		if errs := policy.Validate(p, reg, args); len(errs) != 0 {
			t.Errorf("%s: %v", f, errs)
		}
	}
}
