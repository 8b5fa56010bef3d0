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

// TestChartConstraintsAreTheGoDefaults: the chart's constraints block is apis/config's defaults,
// except usageThresholds, whose difference (80/80 against the built-in cpu 65, memory 95) the
// values' comment and the chart's schema state with the built-in figures; a change to either side
// fails here until the other (or the note) follows.
func TestChartConstraintsAreTheGoDefaults(t *testing.T) {
	data, err := os.ReadFile("charts/accord/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Constraints struct {
			MissingCRPolicy config.MissingCRPolicy `json:"missingCRPolicy"`
			LoadAware       struct {
				UsageThresholds                   map[corev1.ResourceName]int64 `json:"usageThresholds"`
				ResourceWeights                   map[corev1.ResourceName]int64 `json:"resourceWeights"`
				NodeMetricExpirationSeconds       int64                         `json:"nodeMetricExpirationSeconds"`
				EstimatedScalingFactors           map[corev1.ResourceName]int64 `json:"estimatedScalingFactors"`
				EstimatedSecondsAfterPodScheduled int64                         `json:"estimatedSecondsAfterPodScheduled"`
			} `json:"loadAware"`
		} `json:"constraints"`
	}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	c, la := values.Constraints, values.Constraints.LoadAware
	if c.MissingCRPolicy != config.DefaultMissingCRPolicy {
		t.Errorf("constraints.missingCRPolicy %q, Go default %q", c.MissingCRPolicy, config.DefaultMissingCRPolicy)
	}
	if !maps.Equal(la.ResourceWeights, config.DefaultResourceWeights()) {
		t.Errorf("constraints.loadAware.resourceWeights %v, Go default %v", la.ResourceWeights, config.DefaultResourceWeights())
	}
	if la.NodeMetricExpirationSeconds != config.DefaultNodeMetricExpirationSeconds {
		t.Errorf("constraints.loadAware.nodeMetricExpirationSeconds %d, Go default %d", la.NodeMetricExpirationSeconds, config.DefaultNodeMetricExpirationSeconds)
	}
	if !maps.Equal(la.EstimatedScalingFactors, config.DefaultEstimatedScalingFactors()) {
		t.Errorf("constraints.loadAware.estimatedScalingFactors %v, Go default %v", la.EstimatedScalingFactors, config.DefaultEstimatedScalingFactors())
	}
	if la.EstimatedSecondsAfterPodScheduled != config.DefaultEstimatedSecondsAfterPodScheduled {
		t.Errorf("constraints.loadAware.estimatedSecondsAfterPodScheduled %d, Go default %d", la.EstimatedSecondsAfterPodScheduled, config.DefaultEstimatedSecondsAfterPodScheduled)
	}

	// usageThresholds differ on purpose; the note names both figures.
	chart, def := la.UsageThresholds, config.DefaultUsageThresholds()
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
		for _, want := range []string{
			"80/80",
			"cpu " + strconv.FormatInt(def[corev1.ResourceCPU], 10) + ", memory " + strconv.FormatInt(def[corev1.ResourceMemory], 10),
		} {
			if !strings.Contains(doc.text, want) {
				t.Errorf("%s does not note the usageThresholds difference %q", doc.name, want)
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
