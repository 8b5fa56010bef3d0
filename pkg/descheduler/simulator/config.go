package simulator

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
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
	"k8s.io/utils/clock"

	"github.com/accord-sched/accord/apis/config"
	// Registers Accord's scheduler plugin args with kube-scheduler's configuration scheme, so a
	// KubeSchedulerConfiguration naming them decodes exactly as accord-scheduler decodes it.
	_ "github.com/accord-sched/accord/apis/config/scheme"
	"github.com/accord-sched/accord/apis/config/validation"
	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	accordinformers "github.com/accord-sched/accord/pkg/generated/informers/externalversions"
	"github.com/accord-sched/accord/pkg/scheduler/crcache"
	"github.com/accord-sched/accord/pkg/scheduler/plugins/loadaware"
	"github.com/accord-sched/accord/pkg/scheduler/plugins/nodecrdresourcefit"
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

// AccordRegistry returns the out-of-tree registry of accord-scheduler (NodeCRDResourceFit and
// LoadAware) with the plugins reading Accord's CRs from accord, the descheduler's shared CR
// informer factory, instead of from a CR cache of their own (which needs a rest.Config the
// descheduler's Handle does not carry). It requests both CR informers from accord, so call it
// before that factory is started, and pass accord as Options.AccordInformerFactory so the simulator
// waits for them before its first snapshot. The plugins themselves are accord-scheduler's, built with their
// exported constructors, args validated with their validators.
//
// TODO(accord-scheduler): replace with an exported registry constructor over a crcache built
// from an existing factory, once pkg/scheduler/server offers one.
func AccordRegistry(accord accordinformers.SharedInformerFactory, factory informers.SharedInformerFactory) frameworkruntime.Registry {
	crs := crcache.NewStore[schedv1alpha1.ClusterScopedResource, *schedv1alpha1.ClusterScopedResource]()
	nms := crcache.NewStore[slov1alpha1.NodeMetric, *slov1alpha1.NodeMetric]()
	feed(accord.Scheduling().V1alpha1().ClusterScopedResources().Informer(), crs.Put, crs.Remove)
	feed(accord.Slo().V1alpha1().NodeMetrics().Informer(), nms.Put, nms.Remove)
	nodes := factory.Core().V1().Nodes().Lister()
	return frameworkruntime.Registry{
		nodecrdresourcefit.Name: func(_ context.Context, obj runtime.Object, _ fwk.Handle) (fwk.Plugin, error) {
			args := &config.NodeCRDResourceFitArgs{MissingCRPolicy: config.MissingCRPolicyReject}
			if obj != nil {
				a, ok := obj.(*config.NodeCRDResourceFitArgs)
				if !ok {
					return nil, fmt.Errorf("%s: want args of type NodeCRDResourceFitArgs, got %T", nodecrdresourcefit.Name, obj)
				}
				args = a
			}
			if errs := validation.ValidateNodeCRDResourceFitArgs(field.NewPath(nodecrdresourcefit.Name+"Args"), args); len(errs) > 0 {
				return nil, fmt.Errorf("%s: %w", nodecrdresourcefit.Name, errs.ToAggregate())
			}
			return nodecrdresourcefit.New(args, crs), nil
		},
		loadaware.Name: func(_ context.Context, obj runtime.Object, _ fwk.Handle) (fwk.Plugin, error) {
			args, ok := obj.(*config.LoadAwareArgs)
			if !ok {
				return nil, fmt.Errorf("%s: want args of type LoadAwareArgs, got %T", loadaware.Name, obj)
			}
			if errs := validation.ValidateLoadAwareArgs(field.NewPath(loadaware.Name+"Args"), args); len(errs) > 0 {
				return nil, fmt.Errorf("%s: %w", loadaware.Name, errs.ToAggregate())
			}
			return loadaware.New(args, nms, nodes, clock.RealClock{}), nil
		},
	}
}

// feed keeps a store in step with an informer.
func feed(informer cache.SharedIndexInformer, put func(metav1.Object), remove func(string)) {
	// AddEventHandler fails only on a stopped informer; the factory has not been started yet.
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { putObj(obj, put) },
		UpdateFunc: func(_, obj any) { putObj(obj, put) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if o, ok := obj.(metav1.Object); ok {
				remove(o.GetName())
			}
		},
	})
}

func putObj(obj any, put func(metav1.Object)) {
	if o, ok := obj.(metav1.Object); ok {
		put(o)
	}
}
