// Package crcache gives the Accord plugins of one scheduler their view of Accord's custom resources
// (ClusterScopedResources and NodeMetrics): one NodeIndex, fed by a single shared informer factory.
//
// A Cache belongs to one scheduler instance. The registry creates it and hands it to every Accord
// plugin factory, so however many plugins and profiles use the CRs, each CR type is listed and
// watched once. The factory is built from the first plugin's framework Handle (its KubeConfig, with
// the JSON content type CRs need), each informer is started when the first plugin asks for it, and
// a plugin factory returns only once the informer it needs has synced: by the time the scheduler
// runs a Filter or Score, the index is complete. Filter and Score only ever read the index: it is the
// one place a plugin finds a node's CRs, by Node object or by name.
package crcache

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	"github.com/accord-sched/accord/pkg/crdcheck"
	accordclient "github.com/accord-sched/accord/pkg/generated/clientset/versioned"
	accordinformers "github.com/accord-sched/accord/pkg/generated/informers/externalversions"
	"github.com/accord-sched/accord/pkg/informertransform"
)

// DefaultSyncTimeout bounds the wait for an informer's first list. A CRD that is not installed
// makes the list fail forever; the plugin factory then fails instead of hanging the scheduler.
const DefaultSyncTimeout = time.Minute

// Cache is the shared CR informer factory of one scheduler. The zero value is not usable; call New
// or NewForClient.
type Cache struct {
	newClient   func(*rest.Config) (accordclient.Interface, error)
	syncTimeout time.Duration
	// external: the factory belongs to the caller, who starts it, waits for it (HasSynced) and shuts
	// it down.
	external bool

	// served tells which CRDs the cluster serves (NewForFactory's caller found out); nil: ask API
	// discovery through the client (New), or take every CRD as served (NewForClient).
	served   crdcheck.Availability
	discover bool

	mu      sync.Mutex
	client  accordclient.Interface
	factory accordinformers.SharedInformerFactory
	synced  []cache.InformerSynced
	// nodes follows the CR informers (csrReg, metricReg: set once a plugin asked for them) and, once
	// nodeReg is set, the scheduler's Node informer.
	nodes     *NodeIndex
	csrReg    cache.ResourceEventHandlerRegistration
	metricReg cache.ResourceEventHandlerRegistration
	nodeReg   cache.ResourceEventHandlerRegistration
	// reservations: Reservations handed out a lister (ReservationInformer shares its informer).
	reservations bool
	// shared: values of Shared, by key.
	shared map[string]any

	// eventStores are the stores of the scheduler's dynamic informers TypeEventInformers typed (nil
	// until then): the Cache's own informers hand over their object when it is at the same
	// resourceVersion (transform).
	eventStores atomic.Pointer[eventStores]
}

// eventStores are the stores of the scheduler's typed dynamic informers, by kind (nil: not typed).
type eventStores struct{ csr, metric, reservation cache.Store }

// New returns a Cache that builds its client from the framework Handle's KubeConfig.
func New() *Cache {
	return &Cache{
		newClient: func(cfg *rest.Config) (accordclient.Interface, error) {
			cfg = rest.CopyConfig(cfg)
			// The scheduler's kubeconfig asks for protobuf, which custom resources do not speak.
			cfg.ContentType = "application/json"
			cfg.AcceptContentTypes = "application/json"
			return accordclient.NewForConfig(cfg)
		},
		syncTimeout: DefaultSyncTimeout,
		discover:    true,
	}
}

// NewForClient returns a Cache that reads through client instead of a client built from the Handle's
// KubeConfig (a scheduler that makes its own client; the plugins' unit tests give a fake), and that
// takes every CRD as served. Like New's, its plugin factories start the informers and wait for them.
func NewForClient(client accordclient.Interface) *Cache {
	return &Cache{
		newClient:   func(*rest.Config) (accordclient.Interface, error) { return client, nil },
		syncTimeout: DefaultSyncTimeout,
	}
}

// NewForFactory returns a Cache whose NodeIndex is fed by factory, an informer factory its caller
// owns (the descheduler's, for its scheduler simulation). The plugin factories then neither start nor
// wait for it: the caller starts factory after building the plugins and waits for HasSynced before
// the first Filter. Shutdown leaves factory alone. served tells which CRDs the cluster serves (nil:
// all): a plugin that needs another fails to build, naming the CRD, instead of registering an
// informer that could never sync.
func NewForFactory(factory accordinformers.SharedInformerFactory, served crdcheck.Availability) *Cache {
	return &Cache{factory: factory, external: true, syncTimeout: DefaultSyncTimeout, served: served}
}

// require returns a *crdcheck.MissingError when the cluster does not serve crd. A Cache built by New
// asks API discovery (once per CRD it needs), so a scheduler profile that enables a plugin whose CRD
// is not installed fails at start with an error naming both (kube-scheduler names the plugin)
// instead of after the cache-sync timeout.
func (c *Cache) require(crd crdcheck.CRD) error {
	c.mu.Lock()
	served, discover, client := c.served, c.discover, c.client
	c.mu.Unlock()
	if served == nil && discover && client != nil {
		found, err := crdcheck.Discover(client.Discovery(), crd)
		if err != nil {
			return err
		}
		served = found
	}
	return crdcheck.Require(served, crd, "the scheduler plugin")
}

// HasSynced reports whether the NodeIndex has seen the initial list of every informer it follows:
// the CR informers plugins asked for and, once it follows one, the Node informer.
func (c *Cache) HasSynced() bool {
	c.mu.Lock()
	synced := c.synced
	if c.nodeReg != nil {
		synced = append(synced[:len(synced):len(synced)], c.nodeReg.HasSynced)
	}
	c.mu.Unlock()
	for _, s := range synced {
		if !s() {
			return false
		}
	}
	return true
}

func (c *Cache) factoryFor(h fwk.Handle) (accordinformers.SharedInformerFactory, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.factory != nil {
		return c.factory, nil
	}
	var cfg *rest.Config
	if h != nil {
		cfg = h.KubeConfig()
	}
	if cfg == nil {
		cfg = &rest.Config{}
	}
	client, err := c.newClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the Accord client: %w", err)
	}
	c.client = client
	c.factory = accordinformers.NewSharedInformerFactoryWithOptions(client, 0, accordinformers.WithTransform(c.transform))
	return c.factory, nil
}

// transform is the transform of the Cache's own informers: an object loses its managedFields, and
// where the scheduler's dynamic informer of its kind (typed by TypeEventInformers) already holds the
// same object (UID and resourceVersion), that object is kept instead. The two informers watch the
// same objects and each decodes every event; TypeEventInformers' transform hands the Cache's object
// to the dynamic informer when the Cache's event came first, this one the dynamic informer's to the
// Cache when that came first, so that one object per resourceVersion stays in memory whichever
// watch delivers first. (With the dynamic informer first and only the one direction, a NodeMetric
// refreshed every report interval was held twice, the Cache's and the dynamic informer's, until its
// next change: at 5000 nodes some 4 MB of accord-scheduler's live heap.)
func (c *Cache) transform(obj any) (any, error) {
	obj, err := informertransform.StripManagedFields(obj)
	if err != nil {
		return obj, err
	}
	s := c.eventStores.Load()
	if s == nil {
		return obj, nil
	}
	switch o := obj.(type) {
	case *schedv1alpha1.ClusterScopedResource:
		return adopt(s.csr, o), nil
	case *slov1alpha1.NodeMetric:
		return adopt(s.metric, o), nil
	case *schedv1alpha1.Reservation:
		return adopt(s.reservation, o), nil
	}
	return obj, nil
}

// adopt returns the object store holds under o's key when it is a PT with o's UID and
// resourceVersion, o otherwise (and for a nil store).
func adopt[PT interface {
	comparable
	metav1.Object
}](store cache.Store, o PT) PT {
	var zero PT
	if store == nil || o == zero {
		return o
	}
	item, ok, err := store.GetByKey(cache.MetaObjectToName(o).String())
	if err != nil || !ok {
		return o
	}
	if held, ok := item.(PT); ok && held != zero && held.GetUID() == o.GetUID() && held.GetResourceVersion() == o.GetResourceVersion() {
		return held
	}
	return o
}

// ClusterScopedResources makes the scheduler's NodeIndex follow ClusterScopedResources, each with
// its compiled constraints.Offer (NodeData.CR, NodeData.Offer), and returns the index (see Nodes)
// once it holds them all. ctx is the plugin factory's context, which lives as long as the scheduler:
// the informer stops with it.
func (c *Cache) ClusterScopedResources(ctx context.Context, h fwk.Handle) (*NodeIndex, error) {
	f, err := c.factoryFor(h)
	if err != nil {
		return nil, err
	}
	if err := c.require(crdcheck.ClusterScopedResources()); err != nil {
		return nil, err
	}
	x := c.index()
	if err := c.follow(ctx, &c.csrReg, x.ClusterScopedResourceHandler(), f, "ClusterScopedResource", f.Scheduling().V1alpha1().ClusterScopedResources().Informer()); err != nil {
		return nil, err
	}
	return c.Nodes(h)
}

// ClusterScopedResourceInformer is the ClusterScopedResource informer the NodeIndex follows, nil
// until a plugin asked for ClusterScopedResources. The reservation placer watches it to check its
// placed reservations again when their node's ClusterScopedResource changes.
func (c *Cache) ClusterScopedResourceInformer() cache.SharedIndexInformer {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.factory == nil || c.csrReg == nil {
		return nil
	}
	return c.factory.Scheduling().V1alpha1().ClusterScopedResources().Informer()
}

// NodeMetrics makes the scheduler's NodeIndex follow NodeMetrics, each with its compiled
// constraints.Load (NodeData.Metric, NodeData.Load); see ClusterScopedResources.
func (c *Cache) NodeMetrics(ctx context.Context, h fwk.Handle) (*NodeIndex, error) {
	f, err := c.factoryFor(h)
	if err != nil {
		return nil, err
	}
	if err := c.require(crdcheck.NodeMetrics()); err != nil {
		return nil, err
	}
	x := c.index()
	if err := c.follow(ctx, &c.metricReg, x.NodeMetricHandler(), f, "NodeMetric", f.Slo().V1alpha1().NodeMetrics().Informer()); err != nil {
		return nil, err
	}
	return c.Nodes(h)
}

func (c *Cache) index() *NodeIndex {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nodes == nil {
		c.nodes = NewNodeIndex()
	}
	return c.nodes
}

// Nodes returns the scheduler's NodeIndex: it follows the CR informers plugins ask for (before or
// after this call; ClusterScopedResources, NodeMetrics) and, from the first call with a Handle that
// has one, the Node informer of the Handle's informer factory (the scheduler's, which every profile
// shares; the Handle of the descheduler's simulation gives the descheduler's). Every Accord plugin
// of the scheduler reads this one index.
func (c *Cache) Nodes(h fwk.Handle) (*NodeIndex, error) {
	x := c.index()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nodeReg != nil || h == nil || h.SharedInformerFactory() == nil {
		return x, nil
	}
	reg, err := h.SharedInformerFactory().Core().V1().Nodes().Informer().AddEventHandler(x.NodeHandler())
	if err != nil {
		return nil, fmt.Errorf("watching Nodes: %w", err)
	}
	c.nodeReg = reg
	return x, nil
}

// follow registers handler (the index's) on informer unless *reg says it is already, and waits until
// the informer and the handler have seen the initial list.
func (c *Cache) follow(ctx context.Context, reg *cache.ResourceEventHandlerRegistration, handler cache.ResourceEventHandler, f accordinformers.SharedInformerFactory, kind string, informer cache.SharedIndexInformer) error {
	c.mu.Lock()
	if *reg == nil {
		r, err := informer.AddEventHandler(handler)
		if err != nil {
			c.mu.Unlock()
			return fmt.Errorf("watching %ss: %w", kind, err)
		}
		*reg = r
		c.synced = append(c.synced, r.HasSynced)
	}
	synced := append([]cache.InformerSynced{informer.HasSynced}, c.synced...)
	external := c.external
	c.mu.Unlock()
	if external {
		return nil
	}
	return c.startAndSync(ctx, f, kind, synced...)
}

func (c *Cache) startAndSync(ctx context.Context, f accordinformers.SharedInformerFactory, kind string, synced ...cache.InformerSynced) error {
	// Start only starts the informers that are not running yet.
	f.Start(ctx.Done())
	syncCtx, cancel := context.WithTimeout(ctx, c.syncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), synced...) {
		return fmt.Errorf("the %s informer did not sync within %s (is the CRD installed and may the scheduler list it?)", kind, c.syncTimeout)
	}
	return nil
}

// Shutdown waits for the informers to stop. Call it after the context the plugins were built with
// is done.
func (c *Cache) Shutdown() {
	c.mu.Lock()
	f := c.factory
	c.mu.Unlock()
	if f != nil && !c.external {
		f.Shutdown()
	}
}

// CaughtUp reports whether the NodeIndex holds what the CR informers it follows (ClusterScopedResources,
// NodeMetrics) hold now, the same objects: the index's handlers have been given every event their
// informers' stores show. Another handler of those informers (an event-triggered controller) may
// run before the index's: what it asks of the plugins then judges the old CRs until the index
// catches up. It lists the informers' stores and walks the index (O(nodes)).
func (c *Cache) CaughtUp() bool {
	c.mu.Lock()
	f, csr, metric, x := c.factory, c.csrReg != nil, c.metricReg != nil, c.nodes
	c.mu.Unlock()
	if f == nil || x == nil {
		return true
	}
	if csr && !x.holds(f.Scheduling().V1alpha1().ClusterScopedResources().Informer().GetStore().List(), func(d *NodeData) metav1.Object {
		if d.CR == nil {
			return nil
		}
		return d.CR
	}) {
		return false
	}
	return !metric || x.holds(f.Slo().V1alpha1().NodeMetrics().Informer().GetStore().List(), func(d *NodeData) metav1.Object {
		if d.Metric == nil {
			return nil
		}
		return d.Metric
	})
}

// AwaitCaughtUp waits, at most timeout, until CaughtUp, waking at each change of the index (no
// polling), and reports whether it did.
func (c *Cache) AwaitCaughtUp(timeout time.Duration) bool {
	return c.index().Await(timeout, c.CaughtUp)
}

// CatchUpTimeout bounds how long a QueueingHint waits (AwaitResourceVersion) for the NodeIndex to
// see the event it is judging.
const CatchUpTimeout = 200 * time.Millisecond

// AwaitResourceVersion waits, at most timeout, until current reports an object whose
// resourceVersion is at least rv, and reports whether it did.
//
// The scheduler delivers custom-resource events to QueueingHints from its own (dynamic) informer,
// while the plugins filter with the NodeIndex of this Cache. A hint that requeues a pod because of an
// event can call this first, so the pod is not retried against an index that has not seen the event
// yet (and rejected again, with no further event to requeue it). Both informers watch the same API
// server, so the wait is normally a few milliseconds at most.
func AwaitResourceVersion(rv string, timeout time.Duration, current func() (string, bool)) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cur, ok := current(); ok && resourceVersionAtLeast(cur, rv) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
}

// resourceVersionAtLeast compares resource versions. They are opaque in general, but etcd-backed
// API servers issue increasing integers; when either does not parse, only equality counts.
func resourceVersionAtLeast(cur, want string) bool {
	if cur == want {
		return true
	}
	c, err1 := strconv.ParseUint(cur, 10, 64)
	w, err2 := strconv.ParseUint(want, 10, 64)
	return err1 == nil && err2 == nil && c >= w
}
