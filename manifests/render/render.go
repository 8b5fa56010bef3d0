// Package render renders Accord's install manifests the way an operator's tools do: the Helm chart
// (manifests/charts/accord) with Helm's own Go packages (chart loader, schema validation, template
// engine), and the kustomize base (manifests/) or an overlay with kustomize's Go API (what
// `kubectl kustomize` runs). Tests apply the output to a real apiserver; the values reference of the
// chart is generated here from its values.schema.json.
package render

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Release names a chart installation.
type Release struct {
	Name      string
	Namespace string
	// Values override the chart's values.yaml (as `helm install -f` / `--set` do).
	Values map[string]any
}

// Chart renders the chart in dir as `helm install --dry-run` would: values are coalesced with
// values.yaml and validated against values.schema.json (an invalid value fails here, naming its
// field), the templates are rendered, and the chart's crds/ come first in the result.
func Chart(dir string, r Release) ([]*unstructured.Unstructured, error) {
	chrt, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", dir, err)
	}
	vals, err := chartutil.ToRenderValues(chrt, r.Values, chartutil.ReleaseOptions{
		Name: r.Name, Namespace: r.Namespace, Revision: 1, IsInstall: true,
	}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(chrt, vals)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, crd := range chrt.CRDObjects() {
		objs, err := Objects(crd.File.Data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", crd.Filename, err)
		}
		out = append(out, objs...)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		if strings.HasSuffix(name, ".yaml") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		objs, err := Objects([]byte(files[name]))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}

// Kustomize builds the kustomization in dir (a base or an overlay) as `kubectl kustomize dir` does.
func Kustomize(dir string) ([]*unstructured.Unstructured, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), abs)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	data, err := m.AsYaml()
	if err != nil {
		return nil, err
	}
	return Objects(data)
}

// Objects splits a multi-document YAML stream into objects, skipping empty documents.
func Objects(data []byte) ([]*unstructured.Unstructured, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []*unstructured.Unstructured
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		data, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, err
		}
		if s := string(bytes.TrimSpace(data)); s == "null" || s == "{}" {
			continue
		}
		// Unstructured's own decoder keeps integers as int64, as the API machinery expects.
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			return nil, fmt.Errorf("%w: %.80q", err, doc)
		}
		out = append(out, u)
	}
}

// Find returns the object of a kind and name among objs, or nil.
func Find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// ConfigMapData returns a key of a ConfigMap among objs.
func ConfigMapData(objs []*unstructured.Unstructured, name, key string) (string, error) {
	cm := Find(objs, "ConfigMap", name)
	if cm == nil {
		return "", fmt.Errorf("no ConfigMap %s", name)
	}
	v, ok, err := unstructured.NestedString(cm.Object, "data", key)
	if err != nil || !ok {
		return "", fmt.Errorf("ConfigMap %s has no %s: %v", name, key, err)
	}
	return v, nil
}
