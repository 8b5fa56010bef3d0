package runtime

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	"github.com/accord-sched/accord/apis/config"
	"github.com/accord-sched/accord/pkg/crdcheck"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	accordclient "github.com/accord-sched/accord/pkg/generated/clientset/versioned"
	accordinformers "github.com/accord-sched/accord/pkg/generated/informers/externalversions"
)

// NodeNameIndex is the pod informer index on spec.nodeName.
const NodeNameIndex = "spec.nodeName"

// AddPodNodeIndex adds the spec.nodeName index to the factory's pod informer (once; it must run
// before the informer starts) and returns the indexer.
func AddPodNodeIndex(factory informers.SharedInformerFactory) (cache.Indexer, error) {
	informer := factory.Core().V1().Pods().Informer()
	if _, ok := informer.GetIndexer().GetIndexers()[NodeNameIndex]; !ok {
		err := informer.AddIndexers(cache.Indexers{NodeNameIndex: func(obj any) ([]string, error) {
			pod, ok := obj.(*corev1.Pod)
			if !ok || pod.Spec.NodeName == "" {
				return nil, nil
			}
			return []string{pod.Spec.NodeName}, nil
		}})
		if err != nil {
			return nil, fmt.Errorf("adding the %s pod index: %w", NodeNameIndex, err)
		}
	}
	return informer.GetIndexer(), nil
}

// PodsAssignedToNode lists the pods of indexer bound to nodeName that pass filter, by namespace and
// name.
func PodsAssignedToNode(indexer cache.Indexer, nodeName string, filter framework.PodFilter) ([]*corev1.Pod, error) {
	objs, err := indexer.ByIndex(NodeNameIndex, nodeName)
	if err != nil {
		return nil, err
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, obj := range objs {
		pod, ok := obj.(*corev1.Pod)
		if ok && (filter == nil || filter(pod)) {
			pods = append(pods, pod)
		}
	}
	// The index returns a set, in map order: sorted by namespace and name, a plugin's order among
	// pods it ranks alike (SortByPriorityLowToHigh is stable) and so which of them a node's cap lets
	// go are the same from run to run.
	slices.SortFunc(pods, func(a, b *corev1.Pod) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return pods, nil
}

type handle struct {
	profile  string
	client   clientset.Interface
	factory  informers.SharedInformerFactory
	accord   accordinformers.SharedInformerFactory
	evictor  framework.Evictor
	pods     cache.Indexer
	recorder events.EventRecorder
	// nodes is the profile's node selector, the one RunCycle selects the profile's nodes with.
	nodes labels.Selector
	// metrics are the policy's metrics providers, shared by every profile.
	metrics framework.MetricsProviders
	// crds tells which of Accord's CRDs the cluster serves; nil: all of them.
	crds crdcheck.Availability
	// crPolicy is the profile's missingCRPolicy ("" when no plugin sets one).
	crPolicy config.MissingCRPolicy
	// accordClient writes Accord's CRs; nil when the descheduler was given none.
	accordClient accordclient.Interface
	// migrations is Options.MaxConcurrentMigrations.
	migrations int
	// dryRun is Options.DryRun.
	dryRun bool
	// cycle is the descheduler's per-cycle node list, shared by every profile.
	cycle *cycleNodes
}

// cycleNodes is the node list RunCycle takes once per cycle (begin) and drops at its end, which
// every Handle's Nodes answers from. Outside a cycle (an event-triggered controller) Nodes answers
// from a list of the informer cache kept until the Node informer reports a change (changed): an
// event-driven descheduler judging the 50 pods of one node would otherwise list every node for each.
type cycleNodes struct {
	lister corelisters.NodeLister
	// changes counts the Node informer's events (changed).
	changes atomic.Int64

	mu      sync.Mutex
	inCycle bool
	all     []*corev1.Node
	// bySel are the nodes of all matching a selector, by the selector's string, made on demand.
	bySel map[string][]*corev1.Node
	// listedAt is, outside a cycle, the value of changes read before all was listed (-1: all is not
	// such a list).
	listedAt int64
}

func newCycleNodes(lister corelisters.NodeLister) *cycleNodes {
	return &cycleNodes{lister: lister, listedAt: -1}
}

// changed is the Node informer's event handler (add, update, delete): the list kept outside a
// cycle is listed again at the next call.
func (c *cycleNodes) changed() { c.changes.Add(1) }

// handler returns changed as an informer event handler.
func (c *cycleNodes) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.changed() },
		UpdateFunc: func(_, _ any) { c.changed() },
		DeleteFunc: func(any) { c.changed() },
	}
}

func (c *cycleNodes) begin(all []*corev1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inCycle, c.all, c.bySel, c.listedAt = true, all, nil, -1
}

func (c *cycleNodes) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inCycle, c.all, c.bySel, c.listedAt = false, nil, nil, -1
}

func (c *cycleNodes) list(sel labels.Selector) ([]*corev1.Node, error) {
	if sel == nil {
		sel = labels.Everything()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.inCycle {
		// The count is read before listing: an event that lands during the list moves it past
		// listedAt, and the next call lists again.
		if v := c.changes.Load(); c.listedAt < 0 || v != c.listedAt {
			all, err := c.lister.List(labels.Everything())
			if err != nil {
				return nil, err
			}
			c.all, c.bySel, c.listedAt = all, nil, v
		}
	}
	if sel.Empty() {
		return c.all, nil
	}
	key := sel.String()
	if nodes, ok := c.bySel[key]; ok {
		return nodes, nil
	}
	nodes := selectNodes(c.all, sel)
	if c.bySel == nil {
		c.bySel = map[string][]*corev1.Node{}
	}
	c.bySel[key] = nodes
	return nodes, nil
}

var _ framework.Handle = &handle{}

// AccordClient is the client of Accord's CRs (Options.AccordClient).
func (h *handle) AccordClient() accordclient.Interface { return h.accordClient }

// DefaultMaxConcurrentMigrations is the default of --max-concurrent-migrations.
const DefaultMaxConcurrentMigrations = 4

// MaxConcurrentMigrations is Options.MaxConcurrentMigrations, DefaultMaxConcurrentMigrations when
// it is below 1.
func (h *handle) MaxConcurrentMigrations() int {
	if h.migrations < 1 {
		return DefaultMaxConcurrentMigrations
	}
	return h.migrations
}

// DryRun is Options.DryRun.
func (h *handle) DryRun() bool { return h.dryRun }

// MissingCRPolicy is the profile's missingCRPolicy, the default when no plugin sets one.
func (h *handle) MissingCRPolicy() config.MissingCRPolicy {
	if h.crPolicy == "" {
		return config.DefaultMissingCRPolicy
	}
	return h.crPolicy
}

// ServesCRD reports whether the cluster serves crd (Options.CRDs; every CRD when that is nil).
func (h *handle) ServesCRD(crd crdcheck.CRD) bool { return h.crds == nil || h.crds.Serves(crd) }

func (h *handle) ClientSet() clientset.Interface                               { return h.client }
func (h *handle) SharedInformerFactory() informers.SharedInformerFactory       { return h.factory }
func (h *handle) AccordInformerFactory() accordinformers.SharedInformerFactory { return h.accord }
func (h *handle) Evictor() framework.Evictor                                   { return h.evictor }
func (h *handle) EventRecorder() events.EventRecorder                          { return h.recorder }
func (h *handle) ProfileName() string                                          { return h.profile }
func (h *handle) NodeSelector() labels.Selector                                { return h.nodes }
func (h *handle) MetricsProviders() framework.MetricsProviders                 { return h.metrics }
func (h *handle) Nodes(sel labels.Selector) ([]*corev1.Node, error)            { return h.cycle.list(sel) }
func (h *handle) GetPodsAssignedToNode(node string, f framework.PodFilter) ([]*corev1.Pod, error) {
	return PodsAssignedToNode(h.pods, node, f)
}
