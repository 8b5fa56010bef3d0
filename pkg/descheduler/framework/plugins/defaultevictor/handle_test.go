package defaultevictor

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
	"github.com/accord-sched/accord/pkg/descheduler/framework/frameworktest"
	fwruntime "github.com/accord-sched/accord/pkg/descheduler/framework/runtime"
	accordinformers "github.com/accord-sched/accord/pkg/generated/informers/externalversions"
)

// handle is a framework.Handle over a fake cluster, without an evictor.
type handle struct {
	c    *frameworktest.Cluster
	pods cache.Indexer
}

func (h *handle) ClientSet() clientset.Interface                               { return h.c.Client }
func (h *handle) SharedInformerFactory() informers.SharedInformerFactory       { return h.c.Factory }
func (h *handle) AccordInformerFactory() accordinformers.SharedInformerFactory { return h.c.CRs }
func (h *handle) Evictor() framework.Evictor                                   { return nil }
func (h *handle) EventRecorder() events.EventRecorder                          { return nil }
func (h *handle) ProfileName() string                                          { return "test" }
func (h *handle) NodeSelector() labels.Selector                                { return labels.Everything() }
func (h *handle) MetricsProviders() framework.MetricsProviders                 { return nil }
func (h *handle) GetPodsAssignedToNode(node string, f framework.PodFilter) ([]*corev1.Pod, error) {
	return fwruntime.PodsAssignedToNode(h.pods, node, f)
}
