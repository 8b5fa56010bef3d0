package constraints

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestImportsStayPure keeps the package free of informers, clients and scheduler framework types:
// its non-test files may import only the standard library, core/v1, apimachinery, Accord's API
// types and the component-helpers resource helpers.
func TestImportsStayPure(t *testing.T) {
	allowed := []string{
		"k8s.io/api/core/v1",
		"k8s.io/apimachinery/",
		"k8s.io/component-helpers/resource",
		"github.com/accord-sched/accord/apis/",
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if !strings.Contains(path, ".") {
				continue // standard library
			}
			ok := false
			for _, prefix := range allowed {
				if path == strings.TrimSuffix(prefix, "/") || strings.HasPrefix(path, prefix) {
					ok = true
				}
			}
			if !ok {
				t.Errorf("%s imports %s, which pkg/constraints must not depend on", name, path)
			}
		}
	}
}

// TestDependenciesStayPure: not only the direct imports but everything the package pulls in stays
// free of kube-scheduler, client-go and Accord's component configuration (whose registration
// imports kube-scheduler's).
func TestDependenciesStayPure(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"k8s.io/kubernetes/", "k8s.io/client-go/", "k8s.io/kube-scheduler/", "github.com/accord-sched/accord/apis/config"} {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("pkg/constraints depends on %s", dep)
			}
		}
	}
}
