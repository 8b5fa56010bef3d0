// Command chartdoc writes what is generated from the binaries' defaults and the chart's schema:
//
//   - every defaults region of the repository's Markdown and YAML files (the plugin READMEs' args
//     tables, the sample configurations, the chart's values.yaml; see regions.go), from the
//     binaries' own defaulting (Sources);
//   - the "Defaults to" values of the args types' Go doc comments (the API reference; godoc.go);
//   - then the Helm chart's values reference (manifests/charts/accord/README.md) from its
//     values.schema.json and values.yaml.
//
// `make generate` and `make chart-docs` run it from the repository's root; with -verify it writes
// nothing and fails, naming each file, when one is stale (hack/verify.sh).
//
//	go run ./hack/chartdoc [-verify] [CHART_DIR]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/accord-sched/accord/manifests/render"
)

func main() {
	verify := flag.Bool("verify", false, "write nothing; fail if a generated file or region is stale")
	flag.Parse()
	chart := "manifests/charts/accord"
	if flag.NArg() > 0 {
		chart = flag.Arg(0)
	}
	stale, err := Generate(".", chart, !*verify)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chartdoc:", err)
		os.Exit(1)
	}
	if len(stale) > 0 {
		verb := "rewrote"
		if *verify {
			verb = "stale (run 'make generate' and commit the result):"
		}
		fmt.Fprintf(os.Stderr, "chartdoc: %s %s\n", verb, strings.Join(stale, " "))
		if *verify {
			os.Exit(1)
		}
	}
}

// skipDirs are the directories of the repository that hold no files of its own to generate.
var skipDirs = map[string]bool{".git": true, "vendor": true, "bin": true, "node_modules": true, ".playground": true, "testdata": true}

// Generate rewrites the defaults regions of the Markdown and YAML files under root and the defaults
// the args types' doc comments state, then the values reference of the chart in chartDir
// (relative to root). It returns the files that were (write) or
// would be (!write) changed.
func Generate(root, chartDir string, write bool) ([]string, error) {
	sources, err := Sources()
	if err != nil {
		return nil, err
	}
	var changed []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (skipDirs[d.Name()] || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".md", ".yaml", ".yml":
		default:
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil || !HasRegions(data) {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		out, err := Rewrite(rel, data, sources)
		if err != nil {
			return err
		}
		if bytes.Equal(out, data) {
			return nil
		}
		changed = append(changed, rel)
		if write {
			return os.WriteFile(path, out, 0o644)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}

	goChanged, err := rewriteGoDocs(root, sources, write)
	if err != nil {
		return nil, err
	}
	changed = append(changed, goChanged...)

	// The values reference reads values.yaml, whose defaults regions are now written.
	dir := filepath.Join(root, chartDir)
	doc, err := render.ValuesReference(dir)
	if err != nil {
		return nil, err
	}
	ref := filepath.Join(dir, render.ValuesReferenceFile)
	if old, err := os.ReadFile(ref); err != nil || string(old) != doc {
		changed = append(changed, filepath.Join(chartDir, render.ValuesReferenceFile))
		if write {
			if err := os.WriteFile(ref, []byte(doc), 0o644); err != nil {
				return nil, err
			}
		}
	}
	return changed, nil
}
