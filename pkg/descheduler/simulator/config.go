package simulator

import (
	"fmt"

	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	schedvalidation "k8s.io/kubernetes/pkg/scheduler/apis/config/validation"

	// Registers Accord's scheduler plugin args with kube-scheduler's configuration scheme, so a
	// KubeSchedulerConfiguration naming them decodes exactly as accord-scheduler decodes it.
	_ "github.com/accord-sched/accord/apis/config/scheme"
)

// DefaultSchedulerName is the profile kube-scheduler runs when a configuration names none; pods
// without spec.schedulerName use it.
const DefaultSchedulerName = "default-scheduler"

const defaultConfigDoc = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

// LoadConfig reads a KubeSchedulerConfiguration exactly as kube-scheduler's --config does (the
// scheduler's scheme with Accord's args registered, strict decoding, defaults) and validates it
// with kube-scheduler's validation. An empty path yields kube-scheduler's default configuration.
func LoadConfig(path string) (*schedconfig.KubeSchedulerConfiguration, error) {
	var cfg *schedconfig.KubeSchedulerConfiguration
	if path == "" {
		obj, _, err := schedscheme.Codecs.UniversalDecoder().Decode([]byte(defaultConfigDoc), nil, nil)
		if err != nil {
			return nil, fmt.Errorf("decoding kube-scheduler's default configuration: %w", err)
		}
		c, ok := obj.(*schedconfig.KubeSchedulerConfiguration)
		if !ok {
			return nil, fmt.Errorf("decoding kube-scheduler's default configuration: got %T", obj)
		}
		cfg = c
	} else {
		c, err := options.LoadConfigFromFile(klog.Background(), path)
		if err != nil {
			return nil, fmt.Errorf("loading scheduler configuration %s: %w", path, err)
		}
		cfg = c
	}
	if err := schedvalidation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		return nil, fmt.Errorf("invalid scheduler configuration %q: %w", path, err)
	}
	return cfg, nil
}

// withDefaultProfile returns the profiles of cfg plus kube-scheduler's stock default-scheduler
// profile when cfg has none by that name: pods that do not ask for Accord's scheduler are placed
// by the cluster's default scheduler, assumed to run kube-scheduler's defaults.
func withDefaultProfile(cfg *schedconfig.KubeSchedulerConfiguration) ([]schedconfig.KubeSchedulerProfile, error) {
	profiles := append([]schedconfig.KubeSchedulerProfile(nil), cfg.Profiles...)
	for _, p := range profiles {
		if p.SchedulerName == DefaultSchedulerName {
			return profiles, nil
		}
	}
	def, err := LoadConfig("")
	if err != nil {
		return nil, err
	}
	return append(profiles, def.Profiles...), nil
}
