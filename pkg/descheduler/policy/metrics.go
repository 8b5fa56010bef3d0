package policy

import (
	"net/url"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accord-sched/accord/apis/descheduler"
)

// validateMetricsProviders checks metricsCollector and metricsProviders as upstream does (each
// source at most once; metricsCollector.enabled not combined with a KubernetesMetrics provider; the
// Prometheus source needs a URL; an authToken names its Secret's namespace and name), and also
// refuses what upstream would decode and ignore (prometheus settings on the KubernetesMetrics
// source, an unknown source).
func validateMetricsProviders(p *descheduler.DeschedulerPolicy) field.ErrorList {
	var errs field.ErrorList
	seen := map[descheduler.MetricsSource]bool{}
	for i := range p.MetricsProviders {
		prov := &p.MetricsProviders[i]
		path := field.NewPath("metricsProviders").Index(i)
		switch prov.Source {
		case "":
			errs = append(errs, field.Required(path.Child("source"), "KubernetesMetrics or Prometheus"))
			continue
		case descheduler.KubernetesMetrics, descheduler.PrometheusMetrics:
		default:
			errs = append(errs, field.NotSupported(path.Child("source"), prov.Source,
				[]string{string(descheduler.KubernetesMetrics), string(descheduler.PrometheusMetrics)}))
			continue
		}
		if seen[prov.Source] {
			errs = append(errs, field.Duplicate(path.Child("source"), prov.Source))
		}
		seen[prov.Source] = true
		switch prov.Source {
		case descheduler.KubernetesMetrics:
			if prov.Prometheus != nil {
				errs = append(errs, field.Invalid(path.Child("prometheus"), "", "only with source Prometheus"))
			}
			if p.MetricsCollector != nil && p.MetricsCollector.Enabled {
				errs = append(errs, field.Invalid(path.Child("source"), prov.Source, "metricsCollector.enabled (deprecated) already enables KubernetesMetrics; keep one of the two"))
			}
		case descheduler.PrometheusMetrics:
			errs = append(errs, validatePrometheus(path.Child("prometheus"), prov.Prometheus)...)
		}
	}
	return errs
}

func validatePrometheus(path *field.Path, p *descheduler.Prometheus) field.ErrorList {
	if p == nil {
		return field.ErrorList{field.Required(path, "the Prometheus source needs its url")}
	}
	var errs field.ErrorList
	if p.URL == "" {
		errs = append(errs, field.Required(path.Child("url"), ""))
	} else if u, err := url.Parse(p.URL); err != nil {
		errs = append(errs, field.Invalid(path.Child("url"), p.URL, err.Error()))
	} else if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, field.Invalid(path.Child("url"), p.URL, "want http(s)://host[:port][/path]"))
	}
	if p.AuthToken != nil {
		ref := p.AuthToken.SecretReference
		rp := path.Child("authToken", "secretReference")
		if ref == nil {
			errs = append(errs, field.Required(rp, "authToken names the Secret holding the token"))
		} else {
			if ref.Namespace == "" {
				errs = append(errs, field.Required(rp.Child("namespace"), ""))
			}
			if ref.Name == "" {
				errs = append(errs, field.Required(rp.Child("name"), ""))
			}
		}
	}
	return errs
}
