package plugins_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/accord-sched/accord/apis/config"
	"github.com/accord-sched/accord/apis/descheduler"
	"github.com/accord-sched/accord/pkg/constraints"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/defaultevictor"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/highnodeutilization"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/lownodeload"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/lownodeutilization"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/nodecrdresourcefit"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/podlifetime"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/removeduplicates"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/removefailedpods"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/removepodshavingtoomanyrestarts"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/removepodsviolatinginterpodantiaffinity"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/removepodsviolatingnodeaffinity"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/removepodsviolatingnodetaints"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/removepodsviolatingtopologyspreadconstraint"
	"github.com/accord-sched/accord/pkg/descheduler/policy"
)

func load(t *testing.T, file string) *descheduler.DeschedulerPolicy {
	t.Helper()
	p, err := policy.Load(filepath.Join("testdata", "policies", file), plugins.NewInTreeRegistry(), plugins.NewInTreeArgs())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func args(t *testing.T, p *descheduler.DeschedulerPolicy, name string) runtime.Object {
	t.Helper()
	for _, pc := range p.Profiles[0].PluginConfigs {
		if pc.Name == name {
			return pc.Args
		}
	}
	t.Fatalf("no args for %s", name)
	return nil
}

// typeMeta: the decoder leaves decoded args without type information.
func typeMeta(string) metav1.TypeMeta { return metav1.TypeMeta{} }

// TestUpstreamPolicies decodes and validates each plugin's policy file (upstream v1alpha2 format,
// with its documented args) and checks the args the plugin receives, defaults applied.
func TestUpstreamPolicies(t *testing.T) {
	cases := []struct {
		file, plugin string
		want         runtime.Object
	}{
		{"removeduplicates.yaml", removeduplicates.Name, &removeduplicates.RemoveDuplicatesArgs{TypeMeta: typeMeta("RemoveDuplicatesArgs"),
			ExcludeOwnerKinds: []string{"Job"}, Namespaces: &pluginutil.Namespaces{Exclude: []string{"kube-system"}}}},
		{"removepodsviolatingnodeaffinity.yaml", removepodsviolatingnodeaffinity.Name, &removepodsviolatingnodeaffinity.RemovePodsViolatingNodeAffinityArgs{
			TypeMeta: typeMeta("RemovePodsViolatingNodeAffinityArgs"), NodeAffinityType: []string{removepodsviolatingnodeaffinity.Required},
			Namespaces: &pluginutil.Namespaces{Include: []string{"default"}}, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"movable": "true"}}}},
		{"removepodsviolatingnodetaints.yaml", removepodsviolatingnodetaints.Name, &removepodsviolatingnodetaints.RemovePodsViolatingNodeTaintsArgs{
			TypeMeta: typeMeta("RemovePodsViolatingNodeTaintsArgs"), IncludePreferNoSchedule: true, ExcludedTaints: []string{"dedicated=special-user", "reserved"}}},
		{"removepodsviolatinginterpodantiaffinity.yaml", removepodsviolatinginterpodantiaffinity.Name, &removepodsviolatinginterpodantiaffinity.RemovePodsViolatingInterPodAntiAffinityArgs{
			TypeMeta: typeMeta("RemovePodsViolatingInterPodAntiAffinityArgs"), Namespaces: &pluginutil.Namespaces{Exclude: []string{"kube-system"}}}},
		{"removepodsviolatingtopologyspreadconstraint.yaml", removepodsviolatingtopologyspreadconstraint.Name, &removepodsviolatingtopologyspreadconstraint.RemovePodsViolatingTopologySpreadConstraintArgs{
			TypeMeta: typeMeta("RemovePodsViolatingTopologySpreadConstraintArgs"), Constraints: []corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway},
			TopologyBalanceNodeFit: ptr.To(true)}},
		{"removepodshavingtoomanyrestarts.yaml", removepodshavingtoomanyrestarts.Name, &removepodshavingtoomanyrestarts.RemovePodsHavingTooManyRestartsArgs{
			TypeMeta: typeMeta("RemovePodsHavingTooManyRestartsArgs"), PodRestartThreshold: 100, IncludingInitContainers: true, States: []string{"CrashLoopBackOff"}}},
		{"podlifetime.yaml", podlifetime.Name, &podlifetime.PodLifeTimeArgs{TypeMeta: typeMeta("PodLifeTimeArgs"), MaxPodLifeTimeSeconds: ptr.To[uint](86400),
			States: []string{"Pending", "PodInitializing"}, IncludingInitContainers: true}},
		{"podlifetime-transitions.yaml", podlifetime.Name, &podlifetime.PodLifeTimeArgs{TypeMeta: typeMeta("PodLifeTimeArgs"),
			States: []string{"CrashLoopBackOff", "OOMKilled"}, OwnerKinds: &podlifetime.OwnerKinds{Exclude: []string{"DaemonSet"}},
			Conditions: []podlifetime.PodConditionFilter{{Type: "Ready", Status: "False", MinTimeSinceLastTransitionSeconds: ptr.To[uint](600)}},
			ExitCodes:  []int32{137}, IncludingInitContainers: true}},
		{"defaultevictor-protections.yaml", defaultevictor.Name, &defaultevictor.DefaultEvictorArgs{TypeMeta: typeMeta("DefaultEvictorArgs"),
			NamespaceLabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: []string{"payments", "checkout"}}}},
			PodProtections: defaultevictor.PodProtections{ExtraEnabled: []defaultevictor.PodProtection{defaultevictor.PodsWithResourceClaims, defaultevictor.PodsWithPVC},
				DefaultDisabled: []defaultevictor.PodProtection{defaultevictor.FailedBarePods},
				Config:          &defaultevictor.PodProtectionsConfig{PodsWithPVC: &defaultevictor.PodsWithPVCConfig{ProtectedStorageClasses: []defaultevictor.ProtectedStorageClass{{Name: "local-path"}}}}},
			PriorityThreshold: &defaultevictor.PriorityThreshold{Value: ptr.To[int32](2000000000)}, NoEvictionPolicy: defaultevictor.PreferredNoEvictionPolicy,
			MissingCRPolicy: config.MissingCRPolicyReject}},
		{"removefailedpods.yaml", removefailedpods.Name, &removefailedpods.RemoveFailedPodsArgs{TypeMeta: typeMeta("RemoveFailedPodsArgs"),
			Reasons: []string{"NodeAffinity"}, IncludingInitContainers: true, ExcludeOwnerKinds: []string{"Job"}, MinPodLifetimeSeconds: ptr.To[uint](3600), ExitCodes: []int32{1}}},
		{"lownodeutilization.yaml", lownodeutilization.Name, &lownodeutilization.LowNodeUtilizationArgs{TypeMeta: typeMeta("LowNodeUtilizationArgs"),
			Thresholds: pluginutil.ResourceThresholds{"cpu": 20, "memory": 20, "pods": 20}, TargetThresholds: pluginutil.ResourceThresholds{"cpu": 50, "memory": 50, "pods": 50},
			EvictableNamespaces: &pluginutil.Namespaces{Exclude: []string{"kube-system"}}}},
		{"lownodeutilization-evictionlimits.yaml", lownodeutilization.Name, &lownodeutilization.LowNodeUtilizationArgs{TypeMeta: typeMeta("LowNodeUtilizationArgs"),
			Thresholds: pluginutil.ResourceThresholds{"cpu": 25, "memory": 25, "pods": 100}, TargetThresholds: pluginutil.ResourceThresholds{"cpu": 70, "memory": 70, "pods": 100},
			EvictionLimits: &pluginutil.EvictionLimits{Node: ptr.To[uint](3)}}},
		{"lownodeutilization-evictionlimits.yaml", highnodeutilization.Name, &highnodeutilization.HighNodeUtilizationArgs{TypeMeta: typeMeta("HighNodeUtilizationArgs"),
			Thresholds: pluginutil.ResourceThresholds{"cpu": 15, "memory": 100, "pods": 100}}},
		{"highnodeutilization-evictionmodes.yaml", highnodeutilization.Name, &highnodeutilization.HighNodeUtilizationArgs{TypeMeta: typeMeta("HighNodeUtilizationArgs"),
			Thresholds:    pluginutil.ResourceThresholds{"cpu": 30, "memory": 100, "pods": 100},
			EvictionModes: []highnodeutilization.EvictionMode{highnodeutilization.EvictionModeOnlyThresholdingResources}}},
		{"highnodeutilization.yaml", highnodeutilization.Name, &highnodeutilization.HighNodeUtilizationArgs{TypeMeta: typeMeta("HighNodeUtilizationArgs"),
			Thresholds: pluginutil.ResourceThresholds{"cpu": 20, "memory": 20, "pods": 20}, EvictableNamespaces: &pluginutil.Namespaces{Exclude: []string{"kube-system"}}}},
		{"nodecrdresourcefit.yaml", nodecrdresourcefit.Name, &nodecrdresourcefit.NodeCRDResourceFitArgs{TypeMeta: typeMeta("NodeCRDResourceFitArgs"),
			MissingCRPolicy: config.MissingCRPolicyReject, Namespaces: &pluginutil.Namespaces{Exclude: []string{"kube-system"}}}},
		{"lownodeload.yaml", lownodeload.Name, &lownodeload.LowNodeLoadArgs{TypeMeta: typeMeta("LowNodeLoadArgs"),
			HighThresholds: map[corev1.ResourceName]int64{"cpu": 80, "memory": 90}, LowThresholds: map[corev1.ResourceName]int64{"cpu": 40, "memory": 60},
			UsageEstimateArgs: constraints.UsageEstimateArgs{ResourceWeights: map[corev1.ResourceName]int64{"cpu": 2, "memory": 1}, NodeMetricExpirationSeconds: ptr.To[int64](180),
				EstimatedScalingFactors: map[corev1.ResourceName]int64{"cpu": 85, "memory": 70}, EstimatedSecondsAfterPodScheduled: ptr.To[int64](0)},
			ConsecutiveAbnormalities: 2,
			EvictableNamespaces:      &pluginutil.Namespaces{Exclude: []string{"kube-system"}},
			PodSelectors:             []lownodeload.PodSelector{{Name: "stateless", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "stateless"}}}}}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			p := load(t, tc.file)
			if diff := cmp.Diff(tc.want, args(t, p, tc.plugin)); diff != "" {
				t.Fatalf("args (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStandardProfile: the ten standard plugins in one profile, defaults applied to those without
// pluginConfig.
func TestStandardProfile(t *testing.T) {
	p := load(t, "standard.yaml")
	prof := p.Profiles[0]
	if got := len(prof.Plugins.Deschedule.Enabled) + len(prof.Plugins.Balance.Enabled); got != 10 {
		t.Fatalf("%d plugins enabled", got)
	}
	tsc := args(t, p, removepodsviolatingtopologyspreadconstraint.Name).(*removepodsviolatingtopologyspreadconstraint.RemovePodsViolatingTopologySpreadConstraintArgs)
	if !*tsc.TopologyBalanceNodeFit || len(tsc.Constraints) != 1 {
		t.Fatalf("defaults not applied: %+v", tsc)
	}
	hnu := args(t, p, highnodeutilization.Name).(*highnodeutilization.HighNodeUtilizationArgs)
	if hnu.Thresholds["pods"] != 100 {
		t.Fatalf("unlisted pods threshold %v, want the upstream default 100", hnu.Thresholds["pods"])
	}
}

// TestBadArgs: a typo in an args field and invalid values fail with errors naming the field.
func TestBadArgs(t *testing.T) {
	cases := []struct {
		name, file, from, to, want string
	}{
		{"typo", "removepodshavingtoomanyrestarts.yaml", "podRestartThreshold", "podRestartTreshold", `unknown field "podRestartTreshold"`},
		{"percent over 100", "lownodeutilization.yaml", `"cpu" : 50`, `"cpu" : 150`, "profiles[0].pluginConfig[1].args.targetThresholds[cpu]"},
		{"threshold over target", "lownodeutilization.yaml", `"cpu" : 20`, `"cpu" : 70`, "profiles[0].pluginConfig[1].args.thresholds[cpu]"},
		{"affinity type", "removepodsviolatingnodeaffinity.yaml", `"requiredDuringSchedulingIgnoredDuringExecution"`, `"requiredDuringExecution"`, "args.nodeAffinityType[0]"},
		{"no criterion", "podlifetime.yaml", "maxPodLifeTimeSeconds: 86400\n        states:\n        - \"Pending\"\n        - \"PodInitializing\"\n        ", "", "args: Required value: at least one of maxPodLifeTimeSeconds"},
		{"missing CR policy value", "nodecrdresourcefit.yaml", "missingCRPolicy: Reject", "missingCRPolicy: Maybe", "args.missingCRPolicy"},
		{"low above high", "lownodeload.yaml", "cpu: 40", "cpu: 85", "args.lowThresholds[cpu]"},
		{"storage class typo", "defaultevictor-protections.yaml", "protectedStorageClasses:", "protectedStorageClass:", `unknown field "podProtections.config.PodsWithPVC.protectedStorageClass"`},
		{"namespace selector typo", "defaultevictor-protections.yaml", "namespaceLabelSelector:", "namespaceLabelSelecter:", `unknown field "namespaceLabelSelecter"`},
		{"condition typo", "podlifetime-transitions.yaml", "minTimeSinceLastTransitionSeconds", "minTimeSinceTransitionSeconds", `unknown field "conditions[0].minTimeSinceTransitionSeconds"`},
		{"owner kinds both", "podlifetime-transitions.yaml", `exclude: ["DaemonSet"]`, `exclude: ["DaemonSet"]` + "\n          include: [\"Job\"]", "args.ownerKinds"},
		{"eviction mode typo", "highnodeutilization-evictionmodes.yaml", `"OnlyThresholdingResources"`, `"OnlyThresholdResources"`, "args.evictionModes[0]"},
		{"eviction limits typo", "lownodeutilization-evictionlimits.yaml", "node: 3", "nodes: 3", `unknown field "evictionLimits.nodes"`},
		{"unknown protection", "defaultevictor-protections.yaml", `"PodsWithResourceClaims"`, `"PodsWithClaims"`, "args.podProtections.extraEnabled[0]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "policies", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			mutated := strings.Replace(string(data), tc.from, tc.to, 1)
			if mutated == string(data) {
				t.Fatalf("%q not in %s", tc.from, tc.file)
			}
			p, err := policy.Decode([]byte(mutated), plugins.NewInTreeArgs())
			if err == nil {
				if errs := policy.Validate(p, plugins.NewInTreeRegistry(), plugins.NewInTreeArgs()); len(errs) > 0 {
					err = errs.ToAggregate()
				}
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
