package monitoring

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const chartFiles = "../charts/accord/files"

// The committed dashboard is what Dashboard generates, and the chart ships the same rules and
// dashboard byte for byte (make monitoring writes all three).
func TestGeneratedFilesAreCurrent(t *testing.T) {
	want, err := Dashboard()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(DashboardJSON, want) {
		t.Errorf("%s is not what Dashboard generates: run make monitoring", DashboardFile)
	}
	for name, data := range map[string][]byte{DashboardFile: want, RulesFile: Rules} {
		got, err := os.ReadFile(filepath.Join(chartFiles, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Errorf("the chart's files/%s differs from manifests/monitoring/%s: run make monitoring", name, name)
		}
	}
}

// Every rule and panel query parses with Prometheus's parser and names its metrics; every alert has
// a severity, a summary and a runbook_url to a section of docs/runbook.md that exists.
func TestExpressionsParseAndAlertsHaveRunbooks(t *testing.T) {
	exprs, err := Expressions()
	if err != nil {
		t.Fatal(err)
	}
	if len(exprs) < 20 {
		t.Fatalf("%d expressions, want the rules' and the panels'", len(exprs))
	}
	for where, e := range exprs {
		uses, err := Uses(e)
		if err != nil {
			t.Errorf("%s: %v\n%s", where, err, e)
		} else if len(uses) == 0 {
			t.Errorf("%s reads no metric", where)
		}
	}
	runbook, err := os.ReadFile("../../docs/runbook.md")
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(runbook), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			anchors[strings.ToLower(strings.TrimSpace(h))] = true
		}
	}
	groups, err := RuleGroups()
	if err != nil {
		t.Fatal(err)
	}
	const base = "https://github.com/accord-sched/accord/blob/main/docs/runbook.md#"
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %s: needs labels.severity and annotations summary and description", r.Alert)
			}
			anchor, ok := strings.CutPrefix(r.Annotations["runbook_url"], base)
			if !ok || anchor != strings.ToLower(r.Alert) || !anchors[anchor] {
				t.Errorf("alert %s: runbook_url %q, want %s%s with a section \"## %s\" in docs/runbook.md", r.Alert, r.Annotations["runbook_url"], base, strings.ToLower(r.Alert), r.Alert)
			}
		}
	}
}

// Uses names each selected metric with the labels the query reads of it.
func TestUses(t *testing.T) {
	got, err := Uses(`sum by (profile) (rate(a_total{result="error"}[5m])) / on (profile) group_left (plugin) sum by (profile, plugin) (b) unless histogram_quantile(0.9, sum by (le) (rate(c_bucket[5m])))`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a_total": "plugin profile result", "b": "plugin profile", "c_bucket": "le"}
	for m, ls := range want {
		if strings.Join(got[m], " ") != ls {
			t.Errorf("%s: labels %v, want %s", m, got[m], ls)
		}
	}
	if len(got) != len(want) {
		t.Errorf("metrics %v, want %v", got, want)
	}
	if _, err := Uses(`{job="x"}`); err == nil {
		t.Error("a selector without a metric name: no error")
	}
	if _, err := Uses(`sum(rate(x[5m])`); err == nil {
		t.Error("a query that does not parse: no error")
	}
}

// promtool (Debian's prometheus package; .ci/run installs it) checks the rules file and runs its unit
// tests, which fire and do not fire each alert. Without promtool the test skips, unless CI is set.
func TestPromtoolRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool is not installed; .ci/run installs Debian's prometheus package")
		}
		t.Skip("promtool is not installed (apt-get install prometheus); skipping the rules' unit tests")
	}
	for _, args := range [][]string{{"check", "rules", RulesFile}, {"test", "rules", "accord-rules.test.yaml"}} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		} else {
			t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
		}
	}
	// Every alert has a test case, which promtool would not notice.
	tests, err := os.ReadFile("accord-rules.test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	groups, err := RuleGroups()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		for _, r := range g.Rules {
			if n := strings.Count(string(tests), "alertname: "+r.Alert+"\n"); n < 2 {
				t.Errorf("alert %s is evaluated %d times in accord-rules.test.yaml, want a firing and a quiet evaluation", r.Alert, n)
			}
		}
	}
}
