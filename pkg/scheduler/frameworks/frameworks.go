// Package frameworks builds kube-scheduler frameworks outside kube-scheduler's own Scheduler, as
// accord-scheduler's reservation placer and accord-descheduler's scheduler simulation both do: one
// framework per profile over a snapshot of their own, with kube-scheduler's in-tree plugins plus the
// out-of-tree ones, and the shared CSI and DRA managers kube-scheduler hands its profiles.
package frameworks

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	resourceslicetracker "k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkplugins "k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodevolumelimits"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/util/assumecache"
)

// Registry is kube-scheduler's in-tree registry merged with outOfTree, as
// app.NewSchedulerCommand(app.WithPlugin(...)) merges them.
func Registry(outOfTree frameworkruntime.Registry) (frameworkruntime.Registry, error) {
	r := frameworkplugins.NewInTreeRegistry()
	if err := r.Merge(outOfTree); err != nil {
		return nil, err
	}
	return r, nil
}

// Options are what Build needs.
type Options struct {
	// Profiles to build, each keyed by its schedulerName.
	Profiles []schedconfig.KubeSchedulerProfile
	// ComponentConfigVersion is the scheduler configuration's apiVersion.
	ComponentConfigVersion string
	// Registry of the plugins (see Registry).
	Registry        frameworkruntime.Registry
	Client          clientset.Interface
	KubeConfig      *rest.Config
	InformerFactory informers.SharedInformerFactory
	// Snapshot is what the frameworks' plugins read the cluster from.
	Snapshot fwk.SharedLister
	// Parallelism, when positive, overrides the framework's default.
	Parallelism int
	// LogKey names the profile in the frameworks' loggers (e.g. "simulatedProfile").
	LogKey string
}

// Build builds one framework per profile, sharing the CSI manager and (with
// DynamicResourceAllocation on) a DRA manager over opts.InformerFactory, as pkg/scheduler.New does:
// the DynamicResources plugin reads it in PreFilter, also for pods without claims.
func Build(ctx context.Context, opts Options) (map[string]framework.Framework, error) {
	dra, err := draManager(ctx, opts.InformerFactory, opts.Client)
	if err != nil {
		return nil, err
	}
	csi := nodevolumelimits.NewCSIManager(opts.InformerFactory.Storage().V1().CSINodes().Lister())
	out := make(map[string]framework.Framework, len(opts.Profiles))
	for i := range opts.Profiles {
		p := &opts.Profiles[i]
		fwOpts := []frameworkruntime.Option{
			frameworkruntime.WithComponentConfigVersion(opts.ComponentConfigVersion),
			frameworkruntime.WithClientSet(opts.Client),
			frameworkruntime.WithKubeConfig(opts.KubeConfig),
			frameworkruntime.WithInformerFactory(opts.InformerFactory),
			frameworkruntime.WithSharedDRAManager(dra),
			frameworkruntime.WithSharedCSIManager(csi),
			frameworkruntime.WithSnapshotSharedLister(opts.Snapshot),
			frameworkruntime.WithLogger(klog.FromContext(ctx).WithValues(opts.LogKey, p.SchedulerName)),
			frameworkruntime.WithPodNominator(noNominations{}),
		}
		if opts.Parallelism > 0 {
			fwOpts = append(fwOpts, frameworkruntime.WithParallelism(opts.Parallelism))
		}
		fw, err := frameworkruntime.NewFramework(ctx, opts.Registry, p, fwOpts...)
		if err != nil {
			return nil, fmt.Errorf("building the scheduler framework of profile %q: %w", p.SchedulerName, err)
		}
		out[p.SchedulerName] = fw
	}
	return out, nil
}

// draManager is nil unless DynamicResourceAllocation is on.
func draManager(ctx context.Context, factory informers.SharedInformerFactory, client clientset.Interface) (fwk.SharedDRAManager, error) {
	if !feature.DefaultFeatureGate.Enabled(features.DynamicResourceAllocation) {
		return nil, nil
	}
	claims := assumecache.NewAssumeCache(klog.FromContext(ctx), factory.Resource().V1().ResourceClaims().Informer(), "ResourceClaim", "", nil)
	opts := resourceslicetracker.Options{
		EnableDeviceTaintRules:   feature.DefaultFeatureGate.Enabled(features.DRADeviceTaintRules),
		EnableConsumableCapacity: feature.DefaultFeatureGate.Enabled(features.DRAConsumableCapacity),
		SliceInformer:            factory.Resource().V1().ResourceSlices(),
		KubeClient:               client,
	}
	if opts.EnableDeviceTaintRules {
		opts.TaintInformer = factory.Resource().V1beta2().DeviceTaintRules()
		opts.ClassInformer = factory.Resource().V1().DeviceClasses()
	}
	tracker, err := resourceslicetracker.StartTracker(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("starting the ResourceSlice tracker: %w", err)
	}
	return dynamicresources.NewDRAManager(ctx, claims, tracker, factory), nil
}

// noNominations is the PodNominator of the frameworks Build makes: they run beside a scheduler,
// without its queue, so no pod is nominated in them; a plugin that asks (the Reservation plugin's
// PreFilter) hears none instead of calling a nil nominator.
type noNominations struct{}

func (noNominations) AddNominatedPod(klog.Logger, fwk.PodInfo, *fwk.NominatingInfo) {}
func (noNominations) DeleteNominatedPodIfExists(*corev1.Pod)                        {}
func (noNominations) UpdateNominatedPod(klog.Logger, *corev1.Pod, fwk.PodInfo)      {}
func (noNominations) NominatedPodsForNode(string) []fwk.PodInfo                     { return nil }
