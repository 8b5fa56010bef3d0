package fake

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	"github.com/accord-sched/accord/apis/config"
	"github.com/accord-sched/accord/pkg/crdcheck"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	fwruntime "github.com/accord-sched/accord/pkg/descheduler/framework/runtime"
	accordclient "github.com/accord-sched/accord/pkg/generated/clientset/versioned"
	accordinformers "github.com/accord-sched/accord/pkg/generated/informers/externalversions"
)

// Handle is the one fake framework.Handle of the plugin tests: a plugin built with it reads the
// Cluster's fake clientsets and informer factories. The zero values of the other fields are a
// profile named "test" over every node, with no evictor, no event recorder, no metrics providers,
// and no pods (GetPodsAssignedToNode needs Pods, e.g. from fwruntime.AddPodNodeIndex).
type Handle struct {
	Cluster *Cluster
	// Pods is the pod informer's node index (fwruntime.AddPodNodeIndex); nil lists no pods.
	Pods cache.Indexer
	// Evict is what Evictor returns.
	Evict framework.Evictor
	// Recorder is what EventRecorder returns.
	Recorder events.EventRecorder
	// Selector is the profile's node selector (NodeSelector); nil selects every node.
	Selector labels.Selector
	// Metrics is what MetricsProviders returns.
	Metrics framework.MetricsProviders
	// Profile is the profile's name; "" reads "test".
	Profile string
	// CRPolicy is the profile's missingCRPolicy (MissingCRPolicy); "" is the default.
	CRPolicy config.MissingCRPolicy
	// CRDs tells which of Accord's CRDs the cluster serves (ServesCRD); nil: every one.
	CRDs crdcheck.Availability
	// Migrations is what MaxConcurrentMigrations returns; below 1 reads 1.
	Migrations int
	// Dry is what DryRun returns.
	Dry bool
}

// DryRun returns Dry.
func (h *Handle) DryRun() bool { return h.Dry }

// MaxConcurrentMigrations returns Migrations (at least 1).
func (h *Handle) MaxConcurrentMigrations() int { return max(h.Migrations, 1) }

var _ framework.Handle = &Handle{}

// MissingCRPolicy returns CRPolicy, or config.DefaultMissingCRPolicy when it is "".
func (h *Handle) MissingCRPolicy() config.MissingCRPolicy {
	if h.CRPolicy == "" {
		return config.DefaultMissingCRPolicy
	}
	return h.CRPolicy
}

// ServesCRD asks CRDs (every CRD is served when it is nil).
func (h *Handle) ServesCRD(crd crdcheck.CRD) bool { return h.CRDs == nil || h.CRDs.Serves(crd) }

// AccordClient returns the Cluster's fake Accord clientset.
func (h *Handle) AccordClient() accordclient.Interface { return h.Cluster.Accord }

// NewHandle returns a Handle over c with the pod node index registered on c's informer factory
// (before the factory starts).
func NewHandle(c *Cluster) (*Handle, error) {
	pods, err := fwruntime.AddPodNodeIndex(c.Factory)
	if err != nil {
		return nil, err
	}
	return &Handle{Cluster: c, Pods: pods}, nil
}

func (h *Handle) ClientSet() clientset.Interface                               { return h.Cluster.Client }
func (h *Handle) SharedInformerFactory() informers.SharedInformerFactory       { return h.Cluster.Factory }
func (h *Handle) AccordInformerFactory() accordinformers.SharedInformerFactory { return h.Cluster.CRs }
func (h *Handle) Evictor() framework.Evictor                                   { return h.Evict }
func (h *Handle) EventRecorder() events.EventRecorder                          { return h.Recorder }
func (h *Handle) MetricsProviders() framework.MetricsProviders                 { return h.Metrics }

func (h *Handle) ProfileName() string {
	if h.Profile == "" {
		return "test"
	}
	return h.Profile
}

func (h *Handle) NodeSelector() labels.Selector {
	if h.Selector == nil {
		return labels.Everything()
	}
	return h.Selector
}

// Nodes lists the Cluster's nodes matching sel (nil: every node) from its informer cache: the fake
// has no cycles, so every call lists afresh.
func (h *Handle) Nodes(sel labels.Selector) ([]*corev1.Node, error) {
	if sel == nil {
		sel = labels.Everything()
	}
	return h.Cluster.Factory.Core().V1().Nodes().Lister().List(sel)
}

func (h *Handle) GetPodsAssignedToNode(node string, filter framework.PodFilter) ([]*corev1.Pod, error) {
	if h.Pods == nil {
		return nil, nil
	}
	return fwruntime.PodsAssignedToNode(h.Pods, node, filter)
}
