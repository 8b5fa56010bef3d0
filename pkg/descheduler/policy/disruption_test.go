package policy_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/accord-sched/accord/apis/descheduler"
	"github.com/accord-sched/accord/pkg/descheduler/policy"
)

// withAccordFields is upstream's full policy (testdata/upstream-full.yaml) with Accord's disruption
// fields added at the policy's top level.
func withAccordFields(t *testing.T, fields string) string {
	t.Helper()
	data, err := os.ReadFile("testdata/upstream-full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(data), "gracePeriodSeconds: 30\n", "gracePeriodSeconds: 30\n"+fields, 1)
	if doc == string(data) {
		t.Fatal("upstream-full.yaml has no gracePeriodSeconds line to add fields after")
	}
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestWorkloadBudgetFieldsWithUpstreamPolicy: upstream's policy with the workload budget fields
// loads, every upstream field keeps its value, and the new fields decode.
func TestWorkloadBudgetFieldsWithUpstreamPolicy(t *testing.T) {
	reg, args := registries(t)
	p, err := policy.Load(withAccordFields(t, "maxMigratingPerWorkload: 3\nmaxUnavailablePerWorkload: \"20%\"\nevictSingleReplicaWorkloads: true\n"), reg, args)
	if err != nil {
		t.Fatal(err)
	}
	if *p.NodeSelector != "node-role.kubernetes.io/worker=true,zone!=edge" || *p.MaxNoOfPodsToEvictPerNode != 5 ||
		*p.MaxNoOfPodsToEvictPerNamespace != 10 || *p.MaxNoOfPodsToEvictTotal != 40 || *p.GracePeriodSeconds != 30 ||
		!*p.EvictionFailureEventNotification || len(p.Profiles) != 3 {
		t.Errorf("upstream fields changed: %+v", p)
	}
	if p.MaxMigratingPerWorkload.IntValue() != 3 || p.MaxUnavailablePerWorkload.String() != "20%" || !*p.EvictSingleReplicaWorkloads {
		t.Errorf("budget fields: %v %v %v", p.MaxMigratingPerWorkload, p.MaxUnavailablePerWorkload, p.EvictSingleReplicaWorkloads)
	}
}

func TestWorkloadBudgetFieldErrors(t *testing.T) {
	reg, args := registries(t)
	for _, tc := range []struct{ fields, want string }{
		{"maxMigratingPerWorkloads: 3\n", `unknown field "maxMigratingPerWorkloads"`},
		{"maxMigratingPerWorkload: 0\n", "maxMigratingPerWorkload: Invalid value: 0"},
		{"maxUnavailablePerWorkload: \"150%\"\n", `maxUnavailablePerWorkload: Invalid value: "150%"`},
		{"maxUnavailablePerWorkload: \"ten\"\n", `maxUnavailablePerWorkload: Invalid value: "ten"`},
	} {
		_, err := policy.Load(withAccordFields(t, tc.fields), reg, args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.fields, err, tc.want)
		}
	}
}

// TestEvictionWindowsWithUpstreamPolicy: a profile of upstream's policy with evictionWindows loads
// (upstream's fields unchanged); a bad window is an error naming its field; a typo is rejected.
func TestEvictionWindowsWithUpstreamPolicy(t *testing.T) {
	reg, args := registries(t)
	withWindow := func(window string) string {
		path := withAccordFields(t, "evictSingleReplicaWorkloads: false\n")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		doc := strings.Replace(string(data), "  - name: ProfileName\n", "  - name: ProfileName\n    evictionWindows:\n"+window, 1)
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	p, err := policy.Load(withWindow("    - {days: [Mon-Fri], start: \"01:00\", end: \"05:00\", timeZone: Europe/Berlin}\n"), reg, args)
	if err != nil {
		t.Fatal(err)
	}
	if w := p.Profiles[0].EvictionWindows; len(w) != 1 || w[0].TimeZone != "Europe/Berlin" || w[0].Start != "01:00" || *p.MaxNoOfPodsToEvictTotal != 40 {
		t.Errorf("windows %+v", w)
	}
	for _, tc := range []struct{ window, want string }{
		{"    - {start: \"01:00\", end: \"05:00\", timeZone: Europe/Berlinn}\n", "profiles[0].evictionWindows[0].timeZone"},
		{"    - {start: \"01:00\", ends: \"05:00\"}\n", `unknown field "profiles[0].evictionWindows[0].ends"`},
	} {
		if _, err := policy.Load(withWindow(tc.window), reg, args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.window, err, tc.want)
		}
	}
}

// TestEvictionModeAndAllDisruptionFieldsWithUpstreamPolicy: upstream's full v1alpha2 policy with
// every Accord disruption field at once (workload budgets at the top, eviction windows and
// evictionMode Soft in a profile) loads; upstream's fields keep their values and the profiles their
// plugins; a bad mode is an error naming its field and a misspelt one is an unknown field.
func TestEvictionModeAndAllDisruptionFieldsWithUpstreamPolicy(t *testing.T) {
	reg, args := registries(t)
	plain, err := policy.Load("testdata/upstream-full.yaml", reg, args)
	if err != nil {
		t.Fatal(err)
	}
	withProfileFields := func(fields string) string {
		path := withAccordFields(t, "maxMigratingPerWorkload: \"10%\"\nmaxUnavailablePerWorkload: 2\nevictSingleReplicaWorkloads: false\n")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		doc := strings.Replace(string(data), "  - name: ProfileName\n", "  - name: ProfileName\n"+fields, 1)
		if doc == string(data) {
			t.Fatal("upstream-full.yaml has no ProfileName profile")
		}
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	p, err := policy.Load(withProfileFields("    evictionMode: Soft\n    evictionWindows:\n    - {days: [Sat, Sun], start: \"22:00\", end: \"06:00\", timeZone: Europe/Berlin}\n"), reg, args)
	if err != nil {
		t.Fatal(err)
	}
	if *p.NodeSelector != *plain.NodeSelector || *p.MaxNoOfPodsToEvictPerNode != *plain.MaxNoOfPodsToEvictPerNode ||
		*p.MaxNoOfPodsToEvictPerNamespace != *plain.MaxNoOfPodsToEvictPerNamespace || *p.MaxNoOfPodsToEvictTotal != *plain.MaxNoOfPodsToEvictTotal ||
		*p.GracePeriodSeconds != *plain.GracePeriodSeconds || *p.EvictionFailureEventNotification != *plain.EvictionFailureEventNotification ||
		len(p.Profiles) != len(plain.Profiles) {
		t.Errorf("upstream fields changed by Accord's: %+v, without them %+v", p, plain)
	}
	for i := range p.Profiles {
		if got, want := p.Profiles[i].Plugins, plain.Profiles[i].Plugins; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("profile %d plugins %+v, want %+v", i, got, want)
		}
		if len(p.Profiles[i].PluginConfigs) != len(plain.Profiles[i].PluginConfigs) {
			t.Errorf("profile %d pluginConfig changed", i)
		}
	}
	prof := p.Profiles[0]
	if prof.EvictionMode != descheduler.EvictionModeSoft || len(prof.EvictionWindows) != 1 || prof.EvictionWindows[0].End != "06:00" {
		t.Errorf("profile fields: mode %q windows %+v", prof.EvictionMode, prof.EvictionWindows)
	}
	if p.MaxMigratingPerWorkload.String() != "10%" || p.MaxUnavailablePerWorkload.IntValue() != 2 || *p.EvictSingleReplicaWorkloads {
		t.Errorf("budget fields %v %v %v", p.MaxMigratingPerWorkload, p.MaxUnavailablePerWorkload, *p.EvictSingleReplicaWorkloads)
	}
	if plain.Profiles[0].EvictionMode != "" {
		t.Errorf("evictionMode defaulted to %q; unset means Evict", plain.Profiles[0].EvictionMode)
	}
	for _, tc := range []struct{ fields, want string }{
		{"    evictionMode: Gentle\n", `profiles[0].evictionMode: Unsupported value: "Gentle"`},
		{"    evictionMod: Soft\n", `unknown field "profiles[0].evictionMod"`},
	} {
		if _, err := policy.Load(withProfileFields(tc.fields), reg, args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.fields, err, tc.want)
		}
	}
}

// TestSoftModeRefusesAnotherEvictPlugin: evictionMode Soft never calls the evict plugin, so a
// profile that also enables ReservationFirst is an error naming the plugin's field.
func TestSoftModeRefusesAnotherEvictPlugin(t *testing.T) {
	reg, args := registries(t)
	path := filepath.Join(t.TempDir(), "policy.yaml")
	doc := `apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: soft
  evictionMode: Soft
  pluginConfig:
  - name: DefaultEvictor
  - name: PodLifeTime
    args:
      maxPodLifeTimeSeconds: 86400
  plugins:
    deschedule:
      enabled: [PodLifeTime]
    evict:
      enabled: [ReservationFirst]
`
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := policy.Load(path, reg, args)
	if want := `profiles[0].plugins.evict.enabled[0]: Invalid value: "ReservationFirst"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want %q", err, want)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(doc, "evictionMode: Soft", "evictionMode: Evict", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := policy.Load(path, reg, args); err != nil {
		t.Fatalf("evictionMode Evict with ReservationFirst: %v", err)
	}
}

// TestKubeVirtExampleIsTheReadmes: the policy example for KubeVirt VMs in pkg/descheduler/README.md
// is testdata/kubevirt-vms.yaml (which TestKubeVirtSinglePodVM runs), and it loads.
func TestKubeVirtExampleIsTheReadmes(t *testing.T) {
	const file = "testdata/kubevirt-vms.yaml"
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "**KubeVirt VMs are one-pod workloads, held by default.**")
	if !ok {
		t.Fatal("README.md has no paragraph on KubeVirt VMs")
	}
	_, block, ok := strings.Cut(after, "```yaml\n")
	if !ok {
		t.Fatal("README.md: no YAML block after the paragraph on KubeVirt VMs")
	}
	block, _, _ = strings.Cut(block, "```")
	if block != string(example) {
		t.Errorf("README.md's KubeVirt example differs from %s:\n%s\nwant:\n%s", file, block, example)
	}
	reg, args := registries(t)
	p, err := policy.Load(file, reg, args)
	if err != nil {
		t.Fatal(err)
	}
	if p.EvictSingleReplicaWorkloads == nil || !*p.EvictSingleReplicaWorkloads || len(p.Profiles) != 1 {
		t.Errorf("the example does not lift evictSingleReplicaWorkloads for one profile: %+v", p)
	}
}
