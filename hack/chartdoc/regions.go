package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Regions. A file states a default by marking where it is written; the generator rewrites only the
// values inside the marks, from Sources, and leaves every other byte (comments, prose, order,
// fields the source does not default) as it is.
//
// Markdown tables:
//
//	<!-- defaults:scheduler.LoadAware -->
//	| Field | Default | Meaning |
//	| --- | --- | --- |
//	| `usageThresholds` | `{cpu: 65, memory: 95}` | ... |
//	<!-- /defaults -->
//
// In each row the first cell names the field (a code span); when the cell of the "Default" column
// ends with a code span, that span becomes the default (flow YAML); a cell that ends otherwise
// (prose: "the scheduler's ..., else [LoadAware's default](...)") is left alone.
//
// YAML (files, and YAML code blocks of Markdown):
//
//	    # defaults:scheduler.LoadAware
//	    # A comment is kept.
//	    resourceWeights: {cpu: 1, memory: 1}
//	    nodeMetricExpirationSeconds: 180
//	    # /defaults
//
// Each key at the marker's indentation gets the source's value for that field, in the style it is
// written in: on its line (flow) or as an indented block.
//
// Markdown prose, one field (the comments do not render):
//
//	at most <!-- defaults:descheduler.limits maxNoOfPodsToEvictPerNode -->2<!-- /defaults --> pods
//	under <!-- defaults:descheduler.DefaultEvictor missingCRPolicy -->`missingCRPolicy: Reject`<!-- /defaults -->
//
// The text between the comments becomes the value (flow YAML), keeping the backticks of a code span
// and a leading "FIELD: ".

var (
	mdBegin   = regexp.MustCompile(`^<!-- defaults:(\S+) -->\s*$`)
	mdEnd     = regexp.MustCompile(`^<!-- /defaults -->\s*$`)
	yamlBegin = regexp.MustCompile(`^(\s*)# defaults:(\S+)\s*$`)
	yamlEnd   = regexp.MustCompile(`^(\s*)# /defaults\s*$`)
	yamlKey   = regexp.MustCompile(`^(\s*)([A-Za-z0-9_]+):(?:[ \t]+(.*))?$`)
	codeSpan  = regexp.MustCompile("`([^`]+)`$")
	inline    = regexp.MustCompile(`<!-- defaults:(\S+) ([A-Za-z0-9_]+) -->(.*?)<!-- /defaults -->`)
	fieldCell = regexp.MustCompile("^`([A-Za-z0-9_]+)`$")
)

// HasRegions reports whether data has a defaults marker of either kind.
func HasRegions(data []byte) bool {
	return bytes.Contains(data, []byte("<!-- defaults:")) || bytes.Contains(data, []byte("# defaults:"))
}

// Rewrite returns data with every defaults region rewritten from sources; name is the file's name
// for errors.
func Rewrite(name string, data []byte, sources map[string]any) ([]byte, error) {
	lines := strings.Split(string(data), "\n")
	lines, err := rewriteMarkdown(name, lines, sources)
	if err != nil {
		return nil, err
	}
	if lines, err = rewriteInline(name, lines, sources); err != nil {
		return nil, err
	}
	lines, err = rewriteYAML(name, lines, sources)
	if err != nil {
		return nil, err
	}
	return []byte(strings.Join(lines, "\n")), nil
}

func lookupSource(sources map[string]any, name string) (any, error) {
	src, ok := sources[name]
	if !ok {
		return nil, fmt.Errorf("no defaults named %q (known: %s)", name, strings.Join(slices.Sorted(maps.Keys(sources)), ", "))
	}
	return src, nil
}

func rewriteMarkdown(name string, lines []string, sources map[string]any) ([]string, error) {
	out := make([]string, 0, len(lines))
	for i := 0; i < len(lines); i++ {
		out = append(out, lines[i])
		m := mdBegin.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		src, err := lookupSource(sources, m[1])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, i+1, err)
		}
		column, closed := -1, false
		for i++; i < len(lines); i++ {
			line := lines[i]
			if mdEnd.MatchString(line) {
				out, closed = append(out, line), true
				break
			}
			if !strings.HasPrefix(strings.TrimSpace(line), "|") {
				out = append(out, line)
				continue
			}
			cells := strings.Split(strings.TrimSpace(line), "|")
			cells = cells[1 : len(cells)-1]
			if column < 0 {
				for c, cell := range cells {
					if strings.EqualFold(strings.TrimSpace(cell), "default") {
						column = c
					}
				}
				if column < 0 {
					return nil, fmt.Errorf("%s:%d: the table of defaults %s has no Default column", name, i+1, m[1])
				}
				out = append(out, line)
				continue
			}
			f := fieldCell.FindStringSubmatch(strings.TrimSpace(cells[0]))
			if f == nil || column >= len(cells) {
				out = append(out, line) // the separator row, or a row that names no field
				continue
			}
			cell := cells[column]
			trimmed := strings.TrimSpace(cell)
			span := codeSpan.FindStringIndex(trimmed)
			if span == nil {
				out = append(out, line) // prose: the default is stated by reference
				continue
			}
			value, err := fieldDefault(src, f[1])
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %s: %w", name, i+1, m[1], err)
			}
			lead := cell[:len(cell)-len(strings.TrimLeft(cell, " \t"))]
			trail := cell[len(strings.TrimRight(cell, " \t")):]
			cells[column] = lead + trimmed[:span[0]] + "`" + Flow(value) + "`" + trail
			indent := line[:len(line)-len(strings.TrimLeft(line, " \t"))]
			out = append(out, indent+"|"+strings.Join(cells, "|")+"|")
		}
		if !closed {
			return nil, fmt.Errorf("%s: the region %s has no <!-- /defaults -->", name, m[1])
		}
	}
	return out, nil
}

func rewriteInline(name string, lines []string, sources map[string]any) ([]string, error) {
	for i, line := range lines {
		var err error
		lines[i] = inline.ReplaceAllStringFunc(line, func(region string) string {
			m := inline.FindStringSubmatch(region)
			src, e := lookupSource(sources, m[1])
			if e == nil {
				var value any
				if value, e = fieldDefault(src, m[2]); e == nil {
					text, quote := m[3], ""
					if len(text) >= 2 && strings.HasPrefix(text, "`") && strings.HasSuffix(text, "`") {
						text, quote = text[1:len(text)-1], "`"
					}
					prefix := ""
					if strings.HasPrefix(text, m[2]+": ") {
						prefix = m[2] + ": "
					}
					return strings.TrimSuffix(region, m[3]+"<!-- /defaults -->") + quote + prefix + Flow(value) + quote + "<!-- /defaults -->"
				}
			}
			if err == nil {
				err = fmt.Errorf("%s:%d: %s: %w", name, i+1, m[1], e)
			}
			return region
		})
		if err != nil {
			return nil, err
		}
	}
	return lines, nil
}

func indentOf(line string) int { return len(line) - len(strings.TrimLeft(line, " ")) }

func rewriteYAML(name string, lines []string, sources map[string]any) ([]string, error) {
	out := make([]string, 0, len(lines))
	for i := 0; i < len(lines); i++ {
		out = append(out, lines[i])
		m := yamlBegin.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		src, err := lookupSource(sources, m[2])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, i+1, err)
		}
		base, closed := len(m[1]), false
		for i++; i < len(lines); i++ {
			line := lines[i]
			if yamlEnd.MatchString(line) {
				out, closed = append(out, line), true
				break
			}
			trimmed := strings.TrimSpace(line)
			if trimmed == "" || strings.HasPrefix(trimmed, "#") {
				out = append(out, line)
				continue
			}
			k := yamlKey.FindStringSubmatch(line)
			if k == nil || len(k[1]) != base {
				return nil, fmt.Errorf("%s:%d: in the region %s, %q is not a key at the marker's indentation", name, i+1, m[2], trimmed)
			}
			value, err := fieldDefault(src, k[2])
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %s: %w", name, i+1, m[2], err)
			}
			if rest := k[3]; rest != "" {
				out = append(out, k[1]+k[2]+": "+Flow(value))
				continue
			}
			// A block: its lines are the deeper ones that follow.
			step := 2
			for i+1 < len(lines) && strings.TrimSpace(lines[i+1]) != "" && indentOf(lines[i+1]) > base {
				if i++; step == 2 {
					step = indentOf(lines[i]) - base
				}
			}
			if blk := Block(value, strings.Repeat(" ", base+step), strings.Repeat(" ", step)); blk != nil {
				out = append(out, k[1]+k[2]+":")
				out = append(out, blk...)
			} else {
				out = append(out, k[1]+k[2]+": "+Flow(value))
			}
		}
		if !closed {
			return nil, fmt.Errorf("%s: the region %s has no # /defaults", name, m[2])
		}
	}
	return out, nil
}

// fieldDefault returns the default of the field that src writes as name in JSON (inline structs
// included), as generic JSON (maps, []any, json.Number, string, bool). It is an error if src has no
// such field or does not default it (nil).
func fieldDefault(src any, name string) (any, error) {
	v, ok := jsonField(reflect.ValueOf(src), name)
	if !ok {
		return nil, fmt.Errorf("no field %q", name)
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
		if v.IsNil() {
			return nil, fmt.Errorf("%q has no default", name)
		}
	}
	data, err := json.Marshal(v.Interface())
	if err != nil {
		return nil, fmt.Errorf("%q: %w", name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("%q: %w", name, err)
	}
	return out, nil
}

// jsonField finds the field named name in JSON in the struct v points to, looking into embedded
// structs that are inlined.
func jsonField(v reflect.Value, name string) (reflect.Value, bool) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return reflect.Value{}, false
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" {
			continue
		}
		if f.Anonymous && tag == "" {
			if fv, ok := jsonField(v.Field(i), name); ok {
				return fv, true
			}
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		if tag == name {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// Flow writes a generic JSON value as flow YAML, maps with sorted keys: {cpu: 65, memory: 95}.
func Flow(v any) string {
	switch x := v.(type) {
	case map[string]any:
		parts := make([]string, 0, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			parts = append(parts, scalar(k)+": "+Flow(x[k]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			parts = append(parts, Flow(e))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case string:
		return scalar(x)
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "null"
	}
	return fmt.Sprint(v)
}

// Block writes a non-empty map or list as block YAML lines at indent (nested ones step deeper), or
// returns nil for a value that is written on its key's line.
func Block(v any, indent, step string) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if blk := Block(x[k], indent+step, step); blk != nil {
				out = append(out, indent+scalar(k)+":")
				out = append(out, blk...)
			} else {
				out = append(out, indent+scalar(k)+": "+Flow(x[k]))
			}
		}
	case []any:
		for _, e := range x {
			out = append(out, indent+"- "+Flow(e))
		}
	}
	return out
}

var plain = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_./-]*$`)

// scalar writes a string plain when YAML reads it back as the same string, else quoted.
func scalar(s string) string {
	switch strings.ToLower(s) {
	case "true", "false", "null", "yes", "no", "on", "off", "y", "n", "~":
		return strconv.Quote(s)
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil || !plain.MatchString(s) {
		return strconv.Quote(s)
	}
	return s
}
