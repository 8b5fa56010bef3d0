package manifests

import (
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestShippedConfigurationsAreTheChartConstraints: the configurations shipped outside the chart
// (the local and in-cluster scheduler configurations, the playground's policy) give the shared
// args the values of the chart's constraints block, so an install by kustomize and one by Helm
// enforce the same rules.
func TestShippedConfigurationsAreTheChartConstraints(t *testing.T) {
	var values struct {
		Constraints struct {
			MissingCRPolicy string         `json:"missingCRPolicy"`
			LoadAware       map[string]any `json:"loadAware"`
		} `json:"constraints"`
	}
	readYAML(t, "charts/accord/values.yaml", &values)
	chart := values.Constraints

	var configMap struct {
		Data map[string]string `json:"data"`
	}
	readYAML(t, "scheduler/configmap.yaml", &configMap)
	schedulerConfigs := map[string][]byte{"scheduler/config.yaml": readFile(t, "scheduler/config.yaml"),
		"scheduler/configmap.yaml": []byte(configMap.Data["scheduler-config.yaml"])}
	for name, data := range schedulerConfigs {
		var cfg pluginConfigs
		if err := yaml.Unmarshal(data, &cfg); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		seen := 0
		for i, p := range cfg.Profiles {
			for j, pc := range p.PluginConfig {
				path := fmt.Sprintf("%s: profiles[%d].pluginConfig[%d].args", name, i, j)
				switch pc.Name {
				case "LoadAware":
					seen++
					sameArgs(t, path, pc.Args, chart.LoadAware, map[string]string{})
				case "NodeCRDResourceFit":
					seen++
					sameArgs(t, path, pc.Args, map[string]any{"missingCRPolicy": chart.MissingCRPolicy}, map[string]string{})
				}
			}
		}
		if seen < 2 {
			t.Errorf("%s configures %d of LoadAware and NodeCRDResourceFit; the test expects both", name, seen)
		}
	}

	var policy pluginConfigs
	readYAML(t, "descheduler/playground-policy.yaml", &policy)
	seen := 0
	for i, p := range policy.Profiles {
		for j, pc := range p.PluginConfig {
			path := fmt.Sprintf("descheduler/playground-policy.yaml: profiles[%d].pluginConfig[%d].args", i, j)
			switch pc.Name {
			case "LowNodeLoad":
				seen++
				sameArgs(t, path, pc.Args, chart.LoadAware, map[string]string{"highThresholds": "usageThresholds"})
			case "NodeCRDResourceFit", "DefaultEvictor":
				seen++
				sameArgs(t, path, pc.Args, map[string]any{"missingCRPolicy": chart.MissingCRPolicy}, map[string]string{})
			}
		}
	}
	if seen < 3 {
		t.Errorf("descheduler/playground-policy.yaml configures %d of LowNodeLoad, NodeCRDResourceFit and DefaultEvictor; the test expects all", seen)
	}
}

// sameArgs checks that each field of args that the chart's block has (named as in the chart, or
// renamed by rename) has the chart's value; fields the chart does not have are the configuration's
// own.
func sameArgs(t *testing.T, path string, args, chart map[string]any, rename map[string]string) {
	t.Helper()
	for field, got := range args {
		name := field
		if r, ok := rename[field]; ok {
			name = r
		}
		want, ok := chart[name]
		if !ok {
			continue
		}
		// YAML numbers decode as float64 on both sides, and maps print with their keys sorted.
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s.%s is %v, the chart's constraints %v: the shipped configurations give the chart's values", path, field, got, want)
		}
	}
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func readYAML(t *testing.T, name string, into any) {
	t.Helper()
	if err := yaml.Unmarshal(readFile(t, name), into); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// pluginConfigs is what these tests read of a scheduler configuration or a descheduler policy: each
// profile's pluginConfig.
type pluginConfigs struct {
	Profiles []struct {
		PluginConfig []struct {
			Name string         `json:"name"`
			Args map[string]any `json:"args"`
		} `json:"pluginConfig"`
	} `json:"profiles"`
}
