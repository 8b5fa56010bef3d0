package manifests

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/accord-sched/accord/apis/config"
)

// colonMap writes a defaulted map as the docs do: "cpu: 65, memory: 95".
func colonMap(m map[corev1.ResourceName]int64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s: %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// commentBreak joins the lines of a Go comment (or of Markdown) into one line of text.
var commentBreak = regexp.MustCompile(`\s*\n\s*(//\s?)?`)

// TestDefaultsWrittenAreTheGoDefaults: every place outside apis/config/defaults.go that writes one
// of the defaults the two binaries share (the API reference in apis/config/v1 and, for the args
// LoadAware and LowNodeLoad share, pkg/constraints/args.go, the plugin READMEs,
// the descheduler's README and its defaulting comments) writes the Go value. Changing a default in
// apis/config/defaults.go fails here, naming each place to update. The chart's values are held by
// TestChartConstraintsAreTheGoDefaults, the shipped configurations by
// TestShippedConfigurationsAreTheChartConstraints; LowNodeLoad's README and Go comments refer to
// LoadAware's defaults instead of repeating them.
func TestDefaultsWrittenAreTheGoDefaults(t *testing.T) {
	u, w, f := colonMap(config.DefaultUsageThresholds()), colonMap(config.DefaultResourceWeights()), colonMap(config.DefaultEstimatedScalingFactors())
	e, s, m := config.DefaultNodeMetricExpirationSeconds, config.DefaultEstimatedSecondsAfterPodScheduled, string(config.DefaultMissingCRPolicy)
	const (
		v1Types    = "../apis/config/v1/types.go"
		sharedArgs = "../pkg/constraints/args.go" // the API reference of the args LoadAware and LowNodeLoad share
		loadAware  = "../pkg/scheduler/plugins/loadaware/README.md"
		schedFit   = "../pkg/scheduler/plugins/nodecrdresourcefit/README.md"
		deschedFit = "../pkg/descheduler/framework/plugins/nodecrdresourcefit/README.md"
	)
	places := []struct{ def, file, want string }{
		{"usageThresholds", v1Types, "Defaults to " + u + "."},
		{"resourceWeights", sharedArgs, "Defaults to " + w + "."},
		{"nodeMetricExpirationSeconds", sharedArgs, fmt.Sprintf("Defaults to %d.", e)},
		{"estimatedScalingFactors", sharedArgs, "Defaults to " + f + " (Koordinator's)"},
		{"estimatedSecondsAfterPodScheduled", sharedArgs, fmt.Sprintf("Defaults to %d:", s)},
		{"missingCRPolicy", v1Types, fmt.Sprintf("%q (default)", m)},
		{"missingCRPolicy", "../apis/config/v1/defaults.go", "to the default (" + m + ")"},
		{"missingCRPolicy", "../apis/config/v1/conversion.go", "becomes the default (" + m + ")"},
		{"usageThresholds", loadAware, "| `usageThresholds` | `{" + u + "}` |"},
		{"resourceWeights", loadAware, "| `resourceWeights` | `{" + w + "}` |"},
		{"nodeMetricExpirationSeconds", loadAware, fmt.Sprintf("| `nodeMetricExpirationSeconds` | `%d` |", e)},
		{"estimatedScalingFactors", loadAware, "| `estimatedScalingFactors` | `{" + f + "}` |"},
		{"estimatedSecondsAfterPodScheduled", loadAware, fmt.Sprintf("| `estimatedSecondsAfterPodScheduled` | `%d` |", s)},
		{"missingCRPolicy", schedFit, "| `missingCRPolicy` | `" + m + "` |"},
		{"missingCRPolicy", deschedFit, "| `missingCRPolicy` | the scheduler's (with `--scheduler-config-file`), else `" + m + "` |"},
		{"missingCRPolicy", "../pkg/descheduler/README.md", "`missingCRPolicy: " + m + "`, the default"},
		{"missingCRPolicy", "../pkg/descheduler/README.md", "`" + m + "` by default"},
		{"missingCRPolicy", "../pkg/descheduler/framework/plugins/nodecrdresourcefit/defaults.go", "sets missingCRPolicy to " + m + ", the scheduler plugin's default"},
		{"missingCRPolicy", "../pkg/descheduler/framework/plugins/defaultevictor/defaults.go", "missingCRPolicy to " + m + " (the scheduler's NodeCRDResourceFit default)"},
	}
	texts := map[string]string{}
	for _, p := range places {
		text, ok := texts[p.file]
		if !ok {
			data, err := os.ReadFile(p.file)
			if err != nil {
				t.Fatal(err)
			}
			text = commentBreak.ReplaceAllString(string(data), " ")
			texts[p.file] = text
		}
		if !strings.Contains(text, p.want) {
			t.Errorf("%s does not say %q: write %s's default as apis/config/defaults.go has it", p.file, p.want, p.def)
		}
	}
	t.Logf("%d places outside apis/config/defaults.go write a shared default, each checked here", len(places))
}

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
		var cfg struct {
			Profiles []struct {
				PluginConfig []struct {
					Name string         `json:"name"`
					Args map[string]any `json:"args"`
				} `json:"pluginConfig"`
			} `json:"profiles"`
		}
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

	var policy struct {
		Profiles []struct {
			PluginConfig []struct {
				Name string         `json:"name"`
				Args map[string]any `json:"args"`
			} `json:"pluginConfig"`
		} `json:"profiles"`
	}
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
