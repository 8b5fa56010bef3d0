package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const repoRoot = "../.."

// exampleArgs stands for a plugin's args in the rewriting tests.
type exampleArgs struct {
	Thresholds map[string]int64 `json:"thresholds,omitempty"`
	Expiry     *int64           `json:"expiry,omitempty"`
	Policy     string           `json:"policy,omitempty"`
	Enabled    bool             `json:"enabled,omitempty"`
	Unset      *int64           `json:"unset,omitempty"`
}

func exampleSources() map[string]any {
	expiry := int64(180)
	return map[string]any{"plugin.Example": &exampleArgs{Thresholds: map[string]int64{"cpu": 65, "memory": 95}, Expiry: &expiry, Policy: "Reject"}}
}

func rewrite(t *testing.T, in string) string {
	t.Helper()
	out, err := Rewrite("in.md", []byte(in), exampleSources())
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestMarkdownTableGetsTheDefaults(t *testing.T) {
	in := "<!-- defaults:plugin.Example -->\n| Field | Default | Meaning |\n| --- | --- | --- |\n" +
		"| `thresholds` | `{cpu: 1}` | a map |\n" +
		"| `expiry` | the scheduler's (with `--flag`), else `60` | a number |\n" +
		"| `policy` | the scheduler's, else [its default](x.md) | prose is left alone |\n" +
		"| `enabled` | `true` | a bool left out of JSON is its zero |\n" +
		"<!-- /defaults -->\n| `expiry` | `1` | outside the region |\n"
	want := "<!-- defaults:plugin.Example -->\n| Field | Default | Meaning |\n| --- | --- | --- |\n" +
		"| `thresholds` | `{cpu: 65, memory: 95}` | a map |\n" +
		"| `expiry` | the scheduler's (with `--flag`), else `180` | a number |\n" +
		"| `policy` | the scheduler's, else [its default](x.md) | prose is left alone |\n" +
		"| `enabled` | `false` | a bool left out of JSON is its zero |\n" +
		"<!-- /defaults -->\n| `expiry` | `1` | outside the region |\n"
	if got := rewrite(t, in); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestYAMLRegionKeepsStyleAndComments(t *testing.T) {
	in := "args:\n  other: {cpu: 80}\n  # defaults:plugin.Example\n  # a comment stays\n  thresholds:\n    cpu: 1\n  expiry: 60\n  policy: Ignore\n  # /defaults\n  tail: 1\n"
	want := "args:\n  other: {cpu: 80}\n  # defaults:plugin.Example\n  # a comment stays\n  thresholds:\n    cpu: 65\n    memory: 95\n  expiry: 180\n  policy: Reject\n  # /defaults\n  tail: 1\n"
	if got := rewrite(t, in); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	in = "  # defaults:plugin.Example\n  thresholds: {cpu: 1}\n  # /defaults\n"
	if got, want := rewrite(t, in), "  # defaults:plugin.Example\n  thresholds: {cpu: 65, memory: 95}\n  # /defaults\n"; got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestInlineProse(t *testing.T) {
	in := "at most <!-- defaults:plugin.Example expiry -->2<!-- /defaults --> s, under <!-- defaults:plugin.Example policy -->`policy: Ignore`<!-- /defaults -->."
	want := "at most <!-- defaults:plugin.Example expiry -->180<!-- /defaults --> s, under <!-- defaults:plugin.Example policy -->`policy: Reject`<!-- /defaults -->."
	if got := rewrite(t, in); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestRegionErrorsNameTheProblem(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"# defaults:plugin.Nope\n# /defaults\n", `no defaults named "plugin.Nope"`},
		{"# defaults:plugin.Example\nrenamed: 1\n# /defaults\n", `in.md:2: plugin.Example: no field "renamed"`},
		{"# defaults:plugin.Example\nunset: 1\n# /defaults\n", `"unset" has no default`},
		{"# defaults:plugin.Example\nexpiry: 1\n", "has no # /defaults"},
		{"  # defaults:plugin.Example\nexpiry: 1\n  # /defaults\n", "not a key at the marker's indentation"},
		{"<!-- defaults:plugin.Example -->\n| `expiry` | `1` |\n", "has no Default column"},
		{"<!-- defaults:plugin.Example -->\n| Field | Default |\n", "has no <!-- /defaults -->"},
	} {
		_, err := Rewrite("in.md", []byte(c.in), exampleSources())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.in, err, c.want)
		}
	}
}

func TestGoDocStatesTheDefault(t *testing.T) {
	src := "package p\n\ntype exampleArgs struct {\n" +
		"\t// Thresholds are per resource. Defaults to cpu: 1,\n\t// memory: 2 (a note).\n\tThresholds map[string]int64 `json:\"thresholds,omitempty\"`\n" +
		"\t// Expiry is an age. Defaults to\n\t// 60: a minute.\n\tExpiry *int64 `json:\"expiry,omitempty\"`\n" +
		"\t// Policy is a word. Defaults to the scheduler's value.\n\tPolicy string `json:\"policy,omitempty\"`\n}\n"
	want := "package p\n\ntype exampleArgs struct {\n" +
		"\t// Thresholds are per resource. Defaults to cpu: 65, memory: 95 (a note).\n\tThresholds map[string]int64 `json:\"thresholds,omitempty\"`\n" +
		"\t// Expiry is an age. Defaults to\n\t// 180: a minute.\n\tExpiry *int64 `json:\"expiry,omitempty\"`\n" +
		"\t// Policy is a word. Defaults to the scheduler's value.\n\tPolicy string `json:\"policy,omitempty\"`\n}\n"
	types, err := docTypes(exampleSources())
	if err != nil {
		t.Fatal(err)
	}
	out, err := rewriteGoFile("p.go", []byte(src), types[reflect.TypeFor[exampleArgs]().PkgPath()])
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

// TestGeneratedFilesAreUpToDate: every defaults region, every "Defaults to" of the args types' Go
// docs and the chart's values reference are what `make generate` writes from the binaries'
// defaulting now (hack/verify.sh runs the same check).
func TestGeneratedFilesAreUpToDate(t *testing.T) {
	stale, err := Generate(repoRoot, "manifests/charts/accord", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) > 0 {
		t.Errorf("stale, run 'make generate': %v", stale)
	}
}

var regionStart = regexp.MustCompile(`^(\s*)# defaults:(\S+)\s*$`)

// TestYAMLRegionsDecodeToTheDefaults: each YAML defaults region of the repository decodes, strictly,
// into its source's args type, and each field it writes equals the default; every source a region
// names exists.
func TestYAMLRegionsDecodeToTheDefaults(t *testing.T) {
	sources, err := Sources()
	if err != nil {
		t.Fatal(err)
	}
	regions := 0
	err = filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != repoRoot && (skipDirs[d.Name()] || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !slices.Contains([]string{".md", ".yaml", ".yml"}, filepath.Ext(path)) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lines := strings.Split(string(data), "\n")
		for i := 0; i < len(lines); i++ {
			m := regionStart.FindStringSubmatch(lines[i])
			if m == nil {
				continue
			}
			start, indent := i+1, m[1]
			var body []string
			for i++; i < len(lines) && !yamlEnd.MatchString(lines[i]); i++ {
				body = append(body, strings.TrimPrefix(lines[i], indent))
			}
			regions++
			src, ok := sources[m[2]]
			if !ok {
				t.Errorf("%s:%d: no defaults named %s", path, start, m[2])
				continue
			}
			got := reflect.New(reflect.TypeOf(src).Elem()).Interface()
			if err := yaml.UnmarshalStrict([]byte(strings.Join(body, "\n")), got); err != nil {
				t.Errorf("%s:%d: %s: %v", path, start, m[2], err)
				continue
			}
			var keys map[string]any
			if err := yaml.Unmarshal([]byte(strings.Join(body, "\n")), &keys); err != nil || len(keys) == 0 {
				t.Errorf("%s:%d: the region writes no field (%v)", path, start, err)
			}
			for key := range keys {
				g, err1 := fieldDefault(got, key)
				w, err2 := fieldDefault(src, key)
				if err1 != nil || err2 != nil || !reflect.DeepEqual(g, w) {
					t.Errorf("%s:%d: %s is %v, the default %v (%v, %v)", path, start, key, g, w, err1, err2)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if regions == 0 {
		t.Fatal("no YAML defaults region found: the walk is broken")
	}
	t.Logf("%d YAML defaults regions decode to their defaults", regions)
}
