// Package crcache gives the Accord plugins of one scheduler their view of Accord's custom resources
// (ClusterScopedResources and NodeMetrics): stores backed by a single shared informer factory.
//
// A Cache belongs to one scheduler instance. The registry creates it and hands it to every Accord
// plugin factory, so however many plugins and profiles use the CRs, each CR type is listed and
// watched once. The factory is built from the first plugin's framework Handle (its KubeConfig, with
// the JSON content type CRs need), each informer is started when the first plugin asks for it, and
// a plugin factory returns only once the informer it needs has synced: by the time the scheduler
// runs a Filter or Score, the stores are complete. Filter and Score only ever read these stores.
package crcache

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
	"github.com/accord-sched/accord/pkg/constraints"
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
	csrs    *Store[schedv1alpha1.ClusterScopedResource]
	metrics *Store[slov1alpha1.NodeMetric]
	synced  []cache.InformerSynced
	// nodes follows both stores and, once nodeReg is set, the scheduler's Node informer.
	nodes   *NodeIndex
	nodeReg cache.ResourceEventHandlerRegistration
	// reservations: Reservations handed out a lister (ReservationInformer shares its informer).
	reservations bool
}

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

// NewForClient returns a Cache that uses client, whatever the Handle says; for tests.
func NewForClient(client accordclient.Interface) *Cache {
	return &Cache{
		newClient:   func(*rest.Config) (accordclient.Interface, error) { return client, nil },
		syncTimeout: DefaultSyncTimeout,
	}
}

// NewForFactory returns a Cache whose stores are fed by factory, an informer factory its caller owns
// (the descheduler's, for its scheduler simulation). The plugin factories then neither start nor
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

// HasSynced reports whether every store handed out so far, and the NodeIndex once it follows a Node
// informer, have seen their informers' initial lists.
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
	c.factory = accordinformers.NewSharedInformerFactoryWithOptions(client, 0, accordinformers.WithTransform(informertransform.StripManagedFields))
	return c.factory, nil
}

// ClusterScopedResources returns a synced store of ClusterScopedResources. Each is stored with its
// compiled constraints.Offer (see Store.GetDerived). ctx is the plugin
// factory's context, which lives as long as the scheduler: the informer stops with it.
func (c *Cache) ClusterScopedResources(ctx context.Context, h fwk.Handle) (Store[schedv1alpha1.ClusterScopedResource], error) {
	f, err := c.factoryFor(h)
	if err != nil {
		return Store[schedv1alpha1.ClusterScopedResource]{}, err
	}
	if err := c.require(crdcheck.ClusterScopedResources()); err != nil {
		return Store[schedv1alpha1.ClusterScopedResource]{}, err
	}
	// Read-mostly: a node's CR changes rarely, and Filter and Score read it for every (pod, node).
	s, err := storeFor(ctx, c, &c.csrs, compileOffer, true, f, "ClusterScopedResource", f.Scheduling().V1alpha1().ClusterScopedResources().Informer())
	if err == nil {
		c.index().WatchOffers(s)
	}
	return s, err
}

// NodeMetrics returns a synced store of NodeMetrics, each stored with its compiled
// constraints.Load (Store.GetDerived); see ClusterScopedResources.
func (c *Cache) NodeMetrics(ctx context.Context, h fwk.Handle) (Store[slov1alpha1.NodeMetric], error) {
	f, err := c.factoryFor(h)
	if err != nil {
		return Store[slov1alpha1.NodeMetric]{}, err
	}
	if err := c.require(crdcheck.NodeMetrics()); err != nil {
		return Store[slov1alpha1.NodeMetric]{}, err
	}
	s, err := storeFor(ctx, c, &c.metrics, compileLoad, false, f, "NodeMetric", f.Slo().V1alpha1().NodeMetrics().Informer())
	if err == nil {
		c.index().WatchLoads(s)
	}
	return s, err
}

func (c *Cache) index() *NodeIndex {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nodes == nil {
		c.nodes = NewNodeIndex()
	}
	return c.nodes
}

// Nodes returns the scheduler's NodeIndex: it follows the CR stores handed out (before or after this
// call) and, from the first call with a Handle that has one, the Node informer of the Handle's
// informer factory (the scheduler's, which every profile shares; the Handle of the descheduler's
// simulation gives the descheduler's). Every Accord plugin of the scheduler reads this one index.
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

// storeFor returns the store fed by informer, creating it (and its event handler) on first use,
// and waits until the informer and the handler have seen the initial list.
func storeFor[T any](ctx context.Context, c *Cache, slot **Store[T], derive func(*T) any, readMostly bool, f accordinformers.SharedInformerFactory, kind string, informer cache.SharedIndexInformer) (Store[T], error) {
	c.mu.Lock()
	if *slot == nil {
		s := newStore(derive, readMostly)
		reg, err := informer.AddEventHandler(s.handler())
		if err != nil {
			c.mu.Unlock()
			return Store[T]{}, fmt.Errorf("watching %ss: %w", kind, err)
		}
		*slot = &s
		c.synced = append(c.synced, reg.HasSynced)
	}
	s := **slot
	synced := append([]cache.InformerSynced{informer.HasSynced}, c.synced...)
	external := c.external
	c.mu.Unlock()
	if external {
		return s, nil
	}
	if err := c.startAndSync(ctx, f, kind, synced...); err != nil {
		return Store[T]{}, err
	}
	return s, nil
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

// CatchUpTimeout bounds how long a QueueingHint waits (AwaitResourceVersion) for a plugin's store to
// see the event it is judging.
const CatchUpTimeout = 200 * time.Millisecond

// AwaitResourceVersion waits, at most timeout, until current reports an object whose
// resourceVersion is at least rv, and reports whether it did.
//
// The scheduler delivers custom-resource events to QueueingHints from its own (dynamic) informer,
// while the plugins filter with the stores of this Cache. A hint that requeues a pod because of an
// event can call this first, so the pod is not retried against a store that has not seen the event
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

func compileOffer(csr *schedv1alpha1.ClusterScopedResource) any { return constraints.NewOffer(csr) }

// offerOf (for this package's tests) returns the node's ClusterScopedResource and its compiled
// Offer; both are nil when the node has no ClusterScopedResource.
func offerOf(s Store[schedv1alpha1.ClusterScopedResource], node string) (*schedv1alpha1.ClusterScopedResource, *constraints.Offer) {
	csr, d := s.GetDerived(node)
	o, _ := d.(*constraints.Offer)
	return csr, o
}

// NewOfferStore returns a ClusterScopedResource store holding objs that compiles each CR's Offer as
// it is put, as a Cache's store does (nil objs are skipped); for tests and benchmarks, which then Put and Remove.
func NewOfferStore(objs ...*schedv1alpha1.ClusterScopedResource) Store[schedv1alpha1.ClusterScopedResource] {
	s := newStore(compileOffer, true)
	for _, o := range objs {
		if o != nil {
			s.Put(o)
		}
	}
	return s
}

func compileLoad(m *slov1alpha1.NodeMetric) any { return constraints.NewLoad(m) }

// loadOf (for this package's tests) returns the node's NodeMetric and its compiled Load; both are
// nil when the node has no NodeMetric.
func loadOf(s Store[slov1alpha1.NodeMetric], node string) (*slov1alpha1.NodeMetric, *constraints.Load) {
	m, d := s.GetDerived(node)
	l, _ := d.(*constraints.Load)
	return m, l
}

// NewLoadStore returns a NodeMetric store holding objs that compiles each metric's Load as it is
// put, as a Cache's store does (nil objs are skipped); for tests and benchmarks, which then Put and Remove.
func NewLoadStore(objs ...*slov1alpha1.NodeMetric) Store[slov1alpha1.NodeMetric] {
	s := newStore(compileLoad, false)
	for _, o := range objs {
		if o != nil {
			s.Put(o)
		}
	}
	return s
}
