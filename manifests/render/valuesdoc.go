package render

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// ValuesReferenceFile is where the chart's values reference lives, relative to the chart.
const ValuesReferenceFile = "README.md"

type schemaNode struct {
	Type                 any                    `json:"type"`
	Description          string                 `json:"description"`
	Properties           map[string]*schemaNode `json:"properties"`
	AdditionalProperties json.RawMessage        `json:"additionalProperties"`
	Required             []string               `json:"required"`
	Enum                 []any                  `json:"enum"`
	Minimum              *float64               `json:"minimum"`
	Maximum              *float64               `json:"maximum"`
	Pattern              string                 `json:"pattern"`
	Items                *schemaNode            `json:"items"`
}

// ValuesReference renders the chart's values reference (markdown) from its values.schema.json
// (fields, types, constraints, descriptions) and values.yaml (defaults). `make chart-docs` writes it
// to the chart's README.md, and a test fails when that file is stale.
func ValuesReference(chartDir string) (string, error) {
	schemaData, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if err != nil {
		return "", err
	}
	valuesData, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		return "", err
	}
	var root schemaNode
	if err := json.Unmarshal(schemaData, &root); err != nil {
		return "", fmt.Errorf("values.schema.json: %w", err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(valuesData, &values); err != nil {
		return "", fmt.Errorf("values.yaml: %w", err)
	}
	var b strings.Builder
	b.WriteString(`# accord Helm chart

accord-scheduler (a second kube-scheduler profile), accord-descheduler and accord-metrics-reporter
(it writes the NodeMetrics from metrics.k8s.io or Prometheus), their CRDs (` + "`crds/`" + `, copies
of ` + "`manifests/crds`" + `), ServiceAccounts, least-privilege RBAC, leader election, probes,
PodDisruptionBudgets and an optional ServiceMonitor.

` + "```sh" + `
make images                                   # bin/images/accord-{scheduler,descheduler,metrics-reporter}.tar
helm install accord manifests/charts/accord --namespace accord-system --create-namespace \
  --set image.repository=registry.example.com/accord --set image.tag=v0.1.0
` + "```" + `

` + "`constraints`" + ` is the one place of the numbers both binaries must agree on: the chart renders it into
accord-scheduler's KubeSchedulerConfiguration and accord-descheduler's DeschedulerPolicy, and
accord-descheduler checks the two against each other when it starts. Values that break
` + "`values.schema.json`" + ` fail ` + "`helm install`/`helm template`" + ` with the field named.

## Values

Generated from ` + "`values.schema.json`" + ` and ` + "`values.yaml`" + ` by ` + "`make chart-docs`" + `; do not edit.

| Field | Type | Default | Description |
|---|---|---|---|
`)
	walk(&b, "", &root, values)
	return b.String(), nil
}

func walk(b *strings.Builder, prefix string, n *schemaNode, def any) {
	names := make([]string, 0, len(n.Properties))
	for name := range n.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	defs, _ := def.(map[string]any)
	for _, name := range names {
		child := n.Properties[name]
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		if len(child.Properties) > 0 {
			walk(b, path, child, defs[name])
			continue
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", path, typeOf(child), defaultOf(defs, name), escape(child.Description))
	}
}

func typeOf(n *schemaNode) string {
	t := fmt.Sprint(n.Type)
	var extra []string
	switch {
	case t == "object" && len(n.AdditionalProperties) > 0 && string(n.AdditionalProperties) != "false":
		var v schemaNode
		if err := json.Unmarshal(n.AdditionalProperties, &v); err == nil && v.Type != nil {
			t = "map of " + typeOf(&v)
		}
	case t == "array" && n.Items != nil:
		t = "list of " + typeOf(n.Items)
	}
	if len(n.Enum) > 0 {
		var vals []string
		for _, e := range n.Enum {
			vals = append(vals, fmt.Sprint(e))
		}
		extra = append(extra, "one of "+strings.Join(vals, ", "))
	}
	if n.Minimum != nil {
		extra = append(extra, fmt.Sprintf("≥ %v", *n.Minimum))
	}
	if n.Maximum != nil {
		extra = append(extra, fmt.Sprintf("≤ %v", *n.Maximum))
	}
	if len(extra) > 0 {
		t += " (" + strings.Join(extra, ", ") + ")"
	}
	return escape(t)
}

func defaultOf(defs map[string]any, name string) string {
	v, ok := defs[name]
	if !ok {
		return ""
	}
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return "`" + escape(string(data)) + "`"
}

func escape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
