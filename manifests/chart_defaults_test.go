package manifests

import (
	"maps"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/accord-sched/accord/apis/config"
	fwruntime "github.com/accord-sched/accord/pkg/descheduler/framework/runtime"
	"github.com/accord-sched/accord/pkg/scheduler/plugins/reservation"
)

// TestChartUsageThresholdsNote: the chart's constraints block is written from apis/config's
// defaults by `make generate` (hack/chartdoc, whose tests hold it to them), except usageThresholds,
// whose difference from the built-in default (80/80) the values' comment and the chart's schema
// state; a change to either side fails here until the note follows.
func TestChartUsageThresholdsNote(t *testing.T) {
	data, err := os.ReadFile("charts/accord/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Constraints struct {
			LoadAware struct {
				UsageThresholds map[corev1.ResourceName]int64 `json:"usageThresholds"`
			} `json:"loadAware"`
		} `json:"constraints"`
	}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	chart, def := values.Constraints.LoadAware.UsageThresholds, config.DefaultUsageThresholds()
	if maps.Equal(chart, def) {
		t.Fatalf("constraints.loadAware.usageThresholds are the Go default now; drop the note about their difference from values.yaml and values.schema.json")
	}
	if chart[corev1.ResourceCPU] != 80 || chart[corev1.ResourceMemory] != 80 || len(chart) != 2 {
		t.Fatalf("constraints.loadAware.usageThresholds %v: update the note (it says 80/80)", chart)
	}
	schema, err := os.ReadFile("charts/accord/values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []struct{ name, text string }{{"values.yaml", string(data)}, {"values.schema.json", string(schema)}} {
		for _, want := range []string{"80/80", "differs from the plugins' built-in default"} {
			if !strings.Contains(doc.text, want) {
				t.Errorf("%s does not note the usageThresholds difference (%q)", doc.name, want)
			}
		}
	}
}

// TestChartFlagsAreTheGoDefaults: the chart's scheduler.reservationRetention and
// descheduler.maxConcurrentMigrations, and the kustomize Deployments' flags, are the binaries'
// defaults.
func TestChartFlagsAreTheGoDefaults(t *testing.T) {
	data, err := os.ReadFile("charts/accord/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Scheduler struct {
			ReservationRetention string `json:"reservationRetention"`
		} `json:"scheduler"`
		Descheduler struct {
			MaxConcurrentMigrations int `json:"maxConcurrentMigrations"`
		} `json:"descheduler"`
	}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	if d, err := time.ParseDuration(values.Scheduler.ReservationRetention); err != nil || d != reservation.DefaultRetention {
		t.Errorf("scheduler.reservationRetention %q (%v), Go default %s", values.Scheduler.ReservationRetention, err, reservation.DefaultRetention)
	}
	if values.Descheduler.MaxConcurrentMigrations != fwruntime.DefaultMaxConcurrentMigrations {
		t.Errorf("descheduler.maxConcurrentMigrations %d, Go default %d", values.Descheduler.MaxConcurrentMigrations, fwruntime.DefaultMaxConcurrentMigrations)
	}
	for file, flag := range map[string]string{"scheduler/deployment.yaml": "--reservation-retention=", "descheduler/deployment.yaml": "--max-concurrent-migrations="} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var value string
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "- "+flag); ok {
				value = v
			}
		}
		switch flag {
		case "--reservation-retention=":
			if d, err := time.ParseDuration(value); err != nil || d != reservation.DefaultRetention {
				t.Errorf("%s passes %s%q (%v), Go default %s", file, flag, value, err, reservation.DefaultRetention)
			}
		default:
			if value != strconv.Itoa(fwruntime.DefaultMaxConcurrentMigrations) {
				t.Errorf("%s passes %s%q, Go default %d", file, flag, value, fwruntime.DefaultMaxConcurrentMigrations)
			}
		}
	}
}
