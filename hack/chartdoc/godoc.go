package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
)

// The API reference in Go: in the doc comment of a field of a source's args type (or of a struct it
// inlines, like constraints.UsageEstimateArgs), the value after "Defaults to" is the field's
// default, written as the docs write it: "Defaults to cpu: 65, memory: 95.", "Defaults to 180.",
// "Defaults to Reject.". A "Defaults to" followed by prose ("Defaults to the system-critical
// priority") is left alone: only text of the value's own shape (a resource map, a number, a word in
// capitals, true/false) is replaced. The files are found from the types' packages, so args that
// move to another package are followed.

var (
	shapeMap    = `[A-Za-z0-9_./-]+: -?[0-9]+(?:,(?:\s|//)*[A-Za-z0-9_./-]+: -?[0-9]+)*`
	shapeNumber = `-?[0-9]+`
	shapeWord   = `"?[A-Z][A-Za-z0-9]*"?`
	shapeBool   = `true|false`
)

// docValue returns how a Go doc comment writes v, and the regexp of the text it replaces; ok is
// false for a value the doc comments do not state.
func docValue(v any) (text string, shape *regexp.Regexp, ok bool) {
	re := func(s string) *regexp.Regexp { return regexp.MustCompile(`Defaults to((?:\s|//)+)(` + s + `)`) }
	switch x := v.(type) {
	case map[string]any:
		parts := make([]string, 0, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			n, isNum := x[k].(json.Number)
			if !isNum {
				return "", nil, false
			}
			parts = append(parts, k+": "+n.String())
		}
		if len(parts) == 0 {
			return "", nil, false
		}
		return strings.Join(parts, ", "), re(shapeMap), true
	case json.Number:
		return x.String(), re(shapeNumber), true
	case string:
		if !regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`).MatchString(x) {
			return "", nil, false
		}
		return x, re(shapeWord), true
	case bool:
		return fmt.Sprint(x), re(shapeBool), true
	}
	return "", nil, false
}

// docType is one struct type whose field docs state defaults, with the defaulted value of it.
type docType struct {
	source string
	value  reflect.Value // the defaulted struct
}

// docTypes returns, per package path and type name, the defaulted struct of every source's type and
// of the structs it inlines. A type two sources default differently is an error: its doc comment
// can state only one default.
func docTypes(sources map[string]any) (map[string]map[string]docType, error) {
	out := map[string]map[string]docType{}
	var add func(source string, v reflect.Value) error
	add = func(source string, v reflect.Value) error {
		for v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		t := v.Type()
		if t.Kind() != reflect.Struct {
			return nil
		}
		if out[t.PkgPath()] == nil {
			out[t.PkgPath()] = map[string]docType{}
		}
		if prev, ok := out[t.PkgPath()][t.Name()]; ok {
			if !reflect.DeepEqual(prev.value.Interface(), v.Interface()) {
				return fmt.Errorf("%s.%s is defaulted differently by %s and %s: its doc comments cannot state one default", t.PkgPath(), t.Name(), prev.source, source)
			}
		} else {
			out[t.PkgPath()][t.Name()] = docType{source: source, value: v}
		}
		for i := range t.NumField() {
			f := t.Field(i)
			tag, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && tag == "" && strings.Contains(opts, "inline") && f.Type.PkgPath() != "k8s.io/apimachinery/pkg/apis/meta/v1" {
				if err := add(source, v.Field(i)); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(sources)) {
		if err := add(name, reflect.ValueOf(sources[name])); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// rewriteGoDocs rewrites the "Defaults to" values of the doc comments of the sources' types, which
// live in the module's packages under root; it returns the files that were (write) or would be
// changed.
func rewriteGoDocs(root string, sources map[string]any, write bool) ([]string, error) {
	module, err := modulePath(root)
	if err != nil {
		return nil, err
	}
	types, err := docTypes(sources)
	if err != nil {
		return nil, err
	}
	var changed []string
	for _, pkg := range slices.Sorted(maps.Keys(types)) {
		rel, ok := strings.CutPrefix(pkg, module+"/")
		if !ok {
			continue // not this module's: not ours to document
		}
		dir := filepath.Join(root, filepath.FromSlash(rel))
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			return nil, err
		}
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") || strings.HasPrefix(filepath.Base(file), "zz_generated") {
				continue
			}
			data, err := os.ReadFile(file)
			if err != nil {
				return nil, err
			}
			out, err := rewriteGoFile(file, data, types[pkg])
			if err != nil {
				return nil, err
			}
			if bytes.Equal(out, data) {
				continue
			}
			r, _ := filepath.Rel(root, file)
			changed = append(changed, r)
			if write {
				if err := os.WriteFile(file, out, 0o644); err != nil {
					return nil, err
				}
			}
		}
	}
	return changed, nil
}

type edit struct {
	start, end int
	text       string
}

func rewriteGoFile(name string, data []byte, types map[string]docType) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, data, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	var edits []edit
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok {
			return true
		}
		dt, ok := types[ts.Name.Name]
		st, isStruct := ts.Type.(*ast.StructType)
		if !ok || !isStruct {
			return false
		}
		for _, field := range st.Fields.List {
			if field.Doc == nil || field.Tag == nil || len(field.Names) != 1 {
				continue
			}
			tag := reflect.StructTag(strings.Trim(field.Tag.Value, "`"))
			jsonName, _, _ := strings.Cut(tag.Get("json"), ",")
			if jsonName == "" || jsonName == "-" {
				continue
			}
			value, err := fieldDefault(dt.value.Addr().Interface(), jsonName)
			if err != nil {
				continue // no default: nothing to state
			}
			text, shape, ok := docValue(value)
			if !ok {
				continue
			}
			start, end := fset.Position(field.Doc.Pos()).Offset, fset.Position(field.Doc.End()).Offset
			doc := string(data[start:end])
			for _, m := range shape.FindAllStringSubmatchIndex(doc, -1) {
				edits = append(edits, edit{start + m[4], start + m[5], text})
			}
		}
		return false
	})
	slices.SortFunc(edits, func(a, b edit) int { return b.start - a.start })
	out := slices.Clone(data)
	for _, e := range edits {
		out = slices.Concat(out[:e.start], []byte(e.text), out[e.end:])
	}
	return out, nil
}

func modulePath(root string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if m, ok := strings.CutPrefix(line, "module "); ok {
			return strings.TrimSpace(m), nil
		}
	}
	return "", fmt.Errorf("go.mod: no module line")
}
