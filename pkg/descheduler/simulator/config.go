package simulator

import (
	"context"
	"fmt"

	"k8s.io/apiserver/pkg/util/feature"
	resourceslicetracker "k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/features"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	schedvalidation "k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	frameworkplugins "k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodevolumelimits"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/util/assumecache"

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

// sharedManagers builds what kube-scheduler hands every profile besides the informer factory: the
// DRA manager (when DynamicResourceAllocation is on) and the CSI manager, the way
// pkg/scheduler.New builds them, over the given informer factory.
func sharedManagers(ctx context.Context, opts *Options) (fwk.SharedDRAManager, fwk.CSIManager, error) {
	factory := opts.InformerFactory
	var dra fwk.SharedDRAManager
	if feature.DefaultFeatureGate.Enabled(features.DynamicResourceAllocation) {
		logger := klog.FromContext(ctx)
		claims := assumecache.NewAssumeCache(logger, factory.Resource().V1().ResourceClaims().Informer(), "ResourceClaim", "", nil)
		trackerOpts := resourceslicetracker.Options{
			EnableDeviceTaintRules:   feature.DefaultFeatureGate.Enabled(features.DRADeviceTaintRules),
			EnableConsumableCapacity: feature.DefaultFeatureGate.Enabled(features.DRAConsumableCapacity),
			SliceInformer:            factory.Resource().V1().ResourceSlices(),
			KubeClient:               opts.Client,
		}
		if trackerOpts.EnableDeviceTaintRules {
			trackerOpts.TaintInformer = factory.Resource().V1beta2().DeviceTaintRules()
			trackerOpts.ClassInformer = factory.Resource().V1().DeviceClasses()
		}
		tracker, err := resourceslicetracker.StartTracker(ctx, trackerOpts)
		if err != nil {
			return nil, nil, fmt.Errorf("starting the ResourceSlice tracker: %w", err)
		}
		dra = dynamicresources.NewDRAManager(ctx, claims, tracker, factory)
	}
	csi := nodevolumelimits.NewCSIManager(factory.Storage().V1().CSINodes().Lister())
	return dra, csi, nil
}

// registry is kube-scheduler's in-tree registry merged with the out-of-tree one, as
// app.NewSchedulerCommand(app.WithPlugin(...)) merges them.
func registry(outOfTree frameworkruntime.Registry) (frameworkruntime.Registry, error) {
	r := frameworkplugins.NewInTreeRegistry()
	if err := r.Merge(outOfTree); err != nil {
		return nil, err
	}
	return r, nil
}
