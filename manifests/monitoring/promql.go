package monitoring

import (
	"fmt"
	"maps"
	"slices"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// Uses parses expr with Prometheus's PromQL parser and returns the metrics it selects, each with
// the label names the expression reads of it: the names in its selector's matchers, and those of
// the `by`/`without` of an aggregation and the `on`/`ignoring`/`group_left` of a binary operation
// applied to it. A selector without a metric name is an error: every query names its metric.
func Uses(expr string) (map[string][]string, error) {
	e, err := parser.ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	uses := map[string]map[string]bool{}
	var walkErr error
	var walk func(n parser.Node, inherited []string)
	walk = func(n parser.Node, inherited []string) {
		switch n := n.(type) {
		case *parser.VectorSelector:
			name := n.Name
			if name == "" {
				walkErr = fmt.Errorf("selector %s names no metric", n)
				return
			}
			if uses[name] == nil {
				uses[name] = map[string]bool{}
			}
			for _, m := range n.LabelMatchers {
				if m.Name != labels.MetricName {
					uses[name][m.Name] = true
				}
			}
			for _, l := range inherited {
				uses[name][l] = true
			}
			return
		case *parser.AggregateExpr:
			inherited = append(slices.Clone(inherited), n.Grouping...)
		case *parser.BinaryExpr:
			if n.VectorMatching != nil {
				inherited = append(slices.Clone(inherited), n.VectorMatching.MatchingLabels...)
				inherited = append(inherited, n.VectorMatching.Include...)
			}
		}
		for _, c := range parser.Children(n) {
			walk(c, inherited)
		}
	}
	walk(e, nil)
	if walkErr != nil {
		return nil, walkErr
	}
	out := make(map[string][]string, len(uses))
	for name, ls := range uses {
		out[name] = slices.Sorted(maps.Keys(ls))
	}
	return out, nil
}
