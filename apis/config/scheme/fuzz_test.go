package scheme_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/accord-sched/accord/apis/config"
	"github.com/accord-sched/accord/apis/config/scheme"
	"github.com/accord-sched/accord/apis/config/validation"
)

// FuzzDecodePluginArgs decodes a KubeSchedulerConfiguration whose pluginConfig carries arbitrary
// args (JSON) for NodeCRDResourceFit or LoadAware through kube-scheduler's own strict decoder (the
// one its config-file loader uses), then validates what it accepted: nothing panics, a decoding
// error names the plugin, every validation error names its field. `make test` runs the seeds;
// `make fuzz` explores.
func FuzzDecodePluginArgs(f *testing.F) {
	for _, s := range []struct {
		plugin string
		args   string
	}{
		{"NodeCRDResourceFit", `{"missingCRPolicy":"Ignore"}`},
		{"NodeCRDResourceFit", `{"missingCRPolicy":"ignore"}`},
		{"NodeCRDResourceFit", `{"missingCRPolicyy":"Ignore"}`},
		{"LoadAware", `{"usageThresholds":{"cpu":80,"memory":-1},"resourceWeights":{"cpu":0}}`},
		{"LoadAware", `{"usageThresholds":{"ресурс/ü":101,"":5},"nodeMetricExpirationSeconds":-9223372036854775808}`},
		{"LoadAware", `{"resourceWeights":{"cpu":9223372036854775807},"nodeMetricExpirationSeconds":1e40}`},
		{"LoadAware", `{"nodeMetricExpirationSeconds":"soon"}`},
		{"LoadAware", `[]`},
		{"LoadAware", `null`},
	} {
		f.Add(s.plugin, s.args)
	}
	f.Fuzz(func(t *testing.T, plugin, args string) {
		if plugin != "NodeCRDResourceFit" && plugin != "LoadAware" {
			return
		}
		doc := `{"apiVersion":"kubescheduler.config.k8s.io/v1","kind":"KubeSchedulerConfiguration",` +
			`"leaderElection":{"leaderElect":false},"profiles":[{"schedulerName":"accord-scheduler",` +
			`"plugins":{"multiPoint":{"enabled":[{"name":"NodeCRDResourceFit"},{"name":"LoadAware"}]}},` +
			`"pluginConfig":[{"name":"` + plugin + `","args":` + args + `}]}]}`
		obj, _, err := scheme.Codecs.UniversalDecoder().Decode([]byte(doc), nil, nil)
		if err != nil {
			if !strings.Contains(err.Error(), plugin) && !strings.Contains(err.Error(), "json") && !strings.Contains(err.Error(), "yaml") {
				t.Fatalf("decoding error names neither the plugin nor the syntax: %v", err)
			}
			return
		}
		cfg, ok := obj.(*schedconfig.KubeSchedulerConfiguration)
		if !ok {
			t.Fatalf("decoded %T", obj)
		}
		for _, prof := range cfg.Profiles {
			for _, pc := range prof.PluginConfig {
				var errs field.ErrorList
				path := field.NewPath("profiles").Key(prof.SchedulerName).Child("pluginConfig").Key(pc.Name).Child("args")
				switch a := pc.Args.(type) {
				case *config.NodeCRDResourceFitArgs:
					errs = validation.ValidateNodeCRDResourceFitArgs(path, a)
				case *config.LoadAwareArgs:
					errs = validation.ValidateLoadAwareArgs(path, a)
				default:
					// kube-scheduler's own plugins' args.
					continue
				}
				for _, e := range errs {
					if e.Field == "" || !strings.HasPrefix(e.Field, path.String()) {
						t.Fatalf("validation error names no field: %v", e)
					}
				}
			}
		}
	})
}
