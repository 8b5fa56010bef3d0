package metricsreporter

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/accord-sched/accord/apis/metricsreporter/v1alpha1"
	"github.com/accord-sched/accord/apis/metricsreporter/validation"
)

// LoadConfigFile reads, strictly decodes, defaults and validates a configuration file.
func LoadConfigFile(path string) (*v1alpha1.MetricsReporterConfiguration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the configuration: %w", err)
	}
	cfg, err := DecodeConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// DecodeConfig strictly decodes (unknown and duplicate fields are errors), defaults and validates
// a MetricsReporterConfiguration (metricsreporter/v1alpha1, YAML or JSON).
func DecodeConfig(data []byte) (*v1alpha1.MetricsReporterConfiguration, error) {
	scheme := runtime.NewScheme()
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	codecs := serializer.NewCodecFactory(scheme, serializer.EnableStrict)
	obj, gvk, err := codecs.UniversalDecoder(v1alpha1.SchemeGroupVersion).Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decoding the configuration: %w", err)
	}
	cfg, ok := obj.(*v1alpha1.MetricsReporterConfiguration)
	if !ok {
		return nil, fmt.Errorf("decoding the configuration: got %v, want kind MetricsReporterConfiguration", gvk)
	}
	scheme.Default(cfg)
	if errs := validation.Validate(cfg); len(errs) > 0 {
		return nil, fmt.Errorf("invalid configuration: %w", errs.ToAggregate())
	}
	return cfg, nil
}
