// Package cmd holds a test over the commands: the binaries Accord ships build from product code only.
package cmd

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestCommandsImportNoTestCode fails when a command depends on the testing package or on any package
// under a test/ directory (Accord's own test/ or k8s.io/kubernetes/test/...): test code must not run
// in the product (make run included).
func TestCommandsImportNoTestCode(t *testing.T) {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goTool, "list", "-deps", "./...").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list -deps ./...: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list -deps ./...: %v", err)
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) < 100 {
		t.Fatalf("go list -deps ./... listed %d packages; expected the commands' whole dependency graph", len(pkgs))
	}
	var bad []string
	for _, p := range pkgs {
		if p == "testing" || strings.HasPrefix(p, "testing/") || strings.Contains(p, "/test/") || strings.HasSuffix(p, "/test") {
			bad = append(bad, p)
		}
	}
	if len(bad) > 0 {
		t.Errorf("the commands depend on test code:\n  %s\nfind who imports each with: go list -deps -f '{{.ImportPath}}: {{.Imports}}' ./cmd/...", strings.Join(bad, "\n  "))
	}
}

// TestPackagesImportDownTheLayers: every import between Accord's top-level packages goes down the
// layers of README.md's "Architecture" table (never up, never sideways), and every top-level package
// is in the table. A later table of that section whose packages all lie under one top-level package
// (pkg/descheduler) layers that package's insides: an import between two of its parts goes down
// those layers too, and every package under it must be covered by one of its entries (the longest
// entry that is the package or a folder above it). Test files are not counted.
func TestPackagesImportDownTheLayers(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Architecture\n")
	if !ok {
		t.Fatal(`README.md has no "## Architecture" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	tables := layerTables(section)
	if len(tables) == 0 || len(tables[0]) < 10 {
		t.Fatalf("read %d tables from README.md's Architecture section, the first with %d packages; is it still a table of | layer | packages | what |?", len(tables), len(tables[0]))
	}
	layers := tables[0]
	// inner[p] layers the parts of top-level package p.
	inner := map[string]map[string]int{}
	for i, tab := range tables[1:] {
		var parent string
		for pkg := range tab {
			for p := range layers {
				if strings.HasPrefix(pkg, p+"/") {
					if parent != "" && parent != p {
						t.Fatalf("table %d of the Architecture section mixes packages under %s and %s", i+2, parent, p)
					}
					parent = p
				}
			}
			if parent == "" {
				t.Fatalf("table %d of the Architecture section: %s is under no top-level package of the first table", i+2, pkg)
			}
		}
		inner[parent] = tab
	}
	if len(inner["pkg/descheduler"]) < 8 {
		t.Fatalf("README.md's Architecture section layers %d parts of pkg/descheduler; is its table still there?", len(inner["pkg/descheduler"]))
	}

	const module = "github.com/accord-sched/accord/"
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goTool, "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "../...").Output()
	if err != nil {
		t.Fatalf("go list ../...: %v", err)
	}
	top := func(path string) string {
		parts := strings.Split(strings.TrimPrefix(path, module), "/")
		if parts[0] == "apis" && len(parts) > 1 && parts[1] == "config" {
			return "apis/config" // the plugin args, above the shared args they embed (pkg/constraints)
		}
		if parts[0] != "pkg" || len(parts) < 2 {
			return parts[0]
		}
		if parts[1] == "demo" && len(parts) > 2 {
			// pkg/demo only groups the demo tooling: each package under it has its own layer.
			return "pkg/demo/" + parts[2]
		}
		return parts[0] + "/" + parts[1]
	}
	// part is the entry of tab covering path: the longest that is path or a folder above it.
	part := func(tab map[string]int, path string) string {
		rel, best := strings.TrimPrefix(path, module), ""
		for e := range tab {
			if (rel == e || strings.HasPrefix(rel, e+"/")) && len(e) > len(best) {
				best = e
			}
		}
		return best
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if !strings.HasPrefix(fields[0], module) {
			continue
		}
		from := top(fields[0])
		if from == "test" || from == "hack" {
			continue
		}
		lf, ok := layers[from]
		if !ok {
			t.Errorf("%s (%s) is in no layer of README.md's Architecture table", from, fields[0])
			continue
		}
		tab := inner[from]
		fromPart := ""
		if tab != nil {
			if fromPart = part(tab, fields[0]); fromPart == "" {
				t.Errorf("%s is in no layer of README.md's table of %s", fields[0], from)
				continue
			}
		}
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			if top(imp) == from {
				if tab == nil {
					continue
				}
				impPart := part(tab, imp)
				if impPart == fromPart {
					continue
				}
				if li, ok := tab[impPart]; !ok || li >= tab[fromPart] {
					t.Errorf("%s (%s, layer %d inside %s) imports %s (%s, layer %v): imports go down the layers only",
						fields[0], fromPart, tab[fromPart], from, imp, impPart, tab[impPart])
				}
				continue
			}
			if li, ok := layers[top(imp)]; !ok || li >= lf {
				t.Errorf("%s (layer %d) imports %s (layer %v): imports go down the layers only", fields[0], lf, imp, layers[top(imp)])
			}
		}
	}
}

// layerTables reads the | layer | packages | what | tables of a README section, in order: each maps
// its packages to their layers.
func layerTables(section string) []map[string]int {
	var tables []map[string]int
	var cur map[string]int
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "|") {
			cur = nil
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		layer, err := strconv.Atoi(strings.TrimSpace(cells[1]))
		if err != nil {
			continue
		}
		if cur == nil {
			cur = map[string]int{}
			tables = append(tables, cur)
		}
		for _, pkg := range strings.Split(cells[2], ",") {
			cur[strings.Trim(strings.TrimSpace(pkg), "`")] = layer
		}
	}
	return tables
}

// TestProductCommandsImportNoDemoTools: the commands built into product images (every main package
// under cmd/ but the playground and the examples) depend on nothing under pkg/demo, whose README
// says so.
func TestProductCommandsImportNoDemoTools(t *testing.T) {
	const module = "github.com/accord-sched/accord/"
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goTool, "list", "-f", `{{if eq .Name "main"}}{{.ImportPath}}{{end}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	var products []string
	for _, p := range strings.Fields(string(out)) {
		if p != module+"cmd/playground" && !strings.HasPrefix(p, module+"cmd/examples/") {
			products = append(products, p)
		}
	}
	if len(products) < 4 {
		t.Fatalf("found %d product commands (%v); expected accord-scheduler, accord-descheduler, accord-metrics-reporter and accord-console at least", len(products), products)
	}
	for _, p := range products {
		deps, err := exec.Command(goTool, "list", "-deps", p).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", p, err)
		}
		for _, d := range strings.Fields(string(deps)) {
			if strings.HasPrefix(d, module+"pkg/demo/") {
				t.Errorf("%s, a product command, depends on %s (demo tooling)", p, d)
			}
		}
	}
}
