// Package validation checks a defaulted MetricsReporterConfiguration; every error names its field
// path.
package validation

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/apis/metricsreporter/v1alpha1"
)

var percentile = regexp.MustCompile(`^p([1-9][0-9]?)$`)

// ValidStatistic reports whether s is "last", "mean" or "p1".."p99".
func ValidStatistic(s string) bool {
	return s == "last" || s == "mean" || percentile.MatchString(s)
}

// Percentile returns N of "pN", and false for other statistics.
func Percentile(s string) (int, bool) {
	m := percentile.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	n, _ := strconv.Atoi(m[1])
	return n, true
}

// Validate checks a defaulted configuration.
func Validate(c *v1alpha1.MetricsReporterConfiguration) field.ErrorList {
	var errs field.ErrorList
	if c.SamplingPeriodSeconds == nil || *c.SamplingPeriodSeconds < 1 {
		errs = append(errs, field.Invalid(field.NewPath("samplingPeriodSeconds"), deref(c.SamplingPeriodSeconds), "must be at least 1"))
	}
	if c.DefaultReportIntervalSeconds == nil || *c.DefaultReportIntervalSeconds < 1 {
		errs = append(errs, field.Invalid(field.NewPath("defaultReportIntervalSeconds"), deref(c.DefaultReportIntervalSeconds), "must be at least 1"))
	} else if c.SamplingPeriodSeconds != nil && *c.SamplingPeriodSeconds > *c.DefaultReportIntervalSeconds {
		errs = append(errs, field.Invalid(field.NewPath("samplingPeriodSeconds"), *c.SamplingPeriodSeconds, "must not exceed defaultReportIntervalSeconds: an interval would have no sample"))
	}
	if !ValidStatistic(c.Statistic) {
		errs = append(errs, field.NotSupported(field.NewPath("statistic"), c.Statistic, []string{"last", "mean", "p1..p99"}))
	}
	if c.MaxConcurrentWrites == nil || *c.MaxConcurrentWrites < 1 {
		var v any
		if c.MaxConcurrentWrites != nil {
			v = *c.MaxConcurrentWrites
		}
		errs = append(errs, field.Invalid(field.NewPath("maxConcurrentWrites"), v, "must be at least 1"))
	}
	src := field.NewPath("source")
	switch c.Source.Type {
	case v1alpha1.SourceKubernetesMetrics:
		if c.Source.Prometheus != nil {
			errs = append(errs, field.Forbidden(src.Child("prometheus"), "only with type Prometheus"))
		}
	case v1alpha1.SourcePrometheus:
		if c.Source.Prometheus == nil {
			errs = append(errs, field.Required(src.Child("prometheus"), "type Prometheus needs it"))
		} else {
			errs = append(errs, validatePrometheus(c.Source.Prometheus, src.Child("prometheus"))...)
		}
	default:
		errs = append(errs, field.NotSupported(src.Child("type"), c.Source.Type, []string{v1alpha1.SourceKubernetesMetrics, v1alpha1.SourcePrometheus}))
	}
	return errs
}

func validatePrometheus(p *v1alpha1.PrometheusSource, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if p.URL == "" {
		errs = append(errs, field.Required(path.Child("url"), ""))
	} else if u, err := url.Parse(p.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, field.Invalid(path.Child("url"), p.URL, "want http(s)://host[:port][/path]"))
	}
	for name, v := range map[string]string{
		"nodeCPUQuery": p.NodeCPUQuery, "nodeMemoryQuery": p.NodeMemoryQuery, "podCPUQuery": p.PodCPUQuery, "podMemoryQuery": p.PodMemoryQuery,
		"nodeLabel": p.NodeLabel, "podNamespaceLabel": p.PodNamespaceLabel, "podNameLabel": p.PodNameLabel,
	} {
		if v == "" {
			errs = append(errs, field.Required(path.Child(name), ""))
		}
	}
	if p.TimeoutSeconds == nil || *p.TimeoutSeconds < 1 {
		errs = append(errs, field.Invalid(path.Child("timeoutSeconds"), deref(p.TimeoutSeconds), "must be at least 1"))
	}
	return errs
}

func deref(p *int64) string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprint(*p)
}
