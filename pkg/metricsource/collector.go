package metricsource

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// NodeUsageLister reports the current usage of nodes (ResourceMetrics does).
type NodeUsageLister interface {
	NodeUsages(ctx context.Context) (map[string]Sample, error)
}

// Collector defaults.
const (
	// DefaultCollectInterval is how often a NodeCollector polls its source (the upstream
	// descheduler's metrics collector polls every 5 s).
	DefaultCollectInterval = 5 * time.Second
	// DefaultBeta is the weight of the previous smoothed value (upstream: 0.9); the new sample gets
	// 1-beta. At a 5 s interval a step change is 65% through after 50 s.
	DefaultBeta = 0.9
	// DefaultMaxAge: a node the source has not reported for this long has no usage.
	DefaultMaxAge = 3 * time.Minute
)

// CollectorOptions tune a NodeCollector; zero values take the defaults.
type CollectorOptions struct {
	Interval time.Duration
	// Beta is the weight of the previous smoothed value, below 1; zero takes DefaultBeta, a
	// negative value keeps the latest sample only.
	Beta   float64
	MaxAge time.Duration
	// Resources are the resources kept per node; default cpu and memory.
	Resources []corev1.ResourceName
	// Name names the source in errors and logs; default "metrics.k8s.io".
	Name  string
	Clock clock.PassiveClock
}

// NodeCollector polls a NodeUsageLister and keeps each node's usage smoothed with an exponentially
// weighted moving average: the first sample of a node is taken as is, later ones as
// beta*previous + (1-beta)*sample (in milli-units, rounded). A node missing from one poll keeps its
// value until it is older than MaxAge. When the latest poll failed, NodeUsage reports the source as
// down instead of returning old values.
type NodeCollector struct {
	src  NodeUsageLister
	opts CollectorOptions

	mu          sync.RWMutex
	nodes       map[string]*nodeState
	attempted   bool
	lastErr     error
	lastSuccess time.Time
	first       chan struct{}
}

type nodeState struct {
	milli    map[corev1.ResourceName]int64
	lastSeen time.Time
}

// NewNodeCollector returns a collector over src; call Run (or Collect) to fill it.
func NewNodeCollector(src NodeUsageLister, opts CollectorOptions) *NodeCollector {
	if opts.Interval <= 0 {
		opts.Interval = DefaultCollectInterval
	}
	switch {
	case opts.Beta == 0:
		opts.Beta = DefaultBeta
	case opts.Beta < 0:
		opts.Beta = 0
	}
	if opts.MaxAge <= 0 {
		opts.MaxAge = DefaultMaxAge
	}
	if len(opts.Resources) == 0 {
		opts.Resources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}
	}
	if opts.Name == "" {
		opts.Name = "metrics.k8s.io"
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &NodeCollector{src: src, opts: opts, nodes: map[string]*nodeState{}, first: make(chan struct{})}
}

// Run collects now and then every Interval until ctx is done.
func (c *NodeCollector) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("source", c.opts.Name)
	logger.V(2).Info("Starting node usage collection", "interval", c.opts.Interval)
	wait.NonSlidingUntilWithContext(ctx, func(ctx context.Context) {
		if err := c.Collect(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "Collecting node usage failed; plugins that need it skip their cycles until it succeeds")
		}
	}, c.opts.Interval)
}

// WaitForFirstAttempt waits until the first poll has finished (successfully or not), or ctx is done.
func (c *NodeCollector) WaitForFirstAttempt(ctx context.Context) bool {
	select {
	case <-c.first:
		return true
	case <-ctx.Done():
		return false
	}
}

// Collect polls the source once.
func (c *NodeCollector) Collect(ctx context.Context) error {
	samples, err := c.src.NodeUsages(ctx)
	now := c.opts.Clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.attempted {
		c.attempted = true
		close(c.first)
	}
	c.lastErr = err
	if err != nil {
		return err
	}
	c.lastSuccess = now
	for name, s := range samples {
		milli, ok := MilliValues(s.Usage, c.opts.Resources...)
		if !ok {
			continue // a node reporting part of the resources is treated as not reported
		}
		st := c.nodes[name]
		if st == nil {
			c.nodes[name] = &nodeState{milli: milli, lastSeen: now}
			continue
		}
		for r, v := range milli {
			st.milli[r] = int64(math.Round(c.opts.Beta*float64(st.milli[r]) + (1-c.opts.Beta)*float64(v)))
		}
		st.lastSeen = now
	}
	for name, st := range c.nodes {
		if now.Sub(st.lastSeen) > c.opts.MaxAge {
			delete(c.nodes, name)
		}
	}
	return nil
}

// NodeUsage returns the smoothed usage of a node in milli-units, or an error that says why there is
// none: no poll has finished yet, the latest poll failed (the source is down), or the source has not
// reported the node within MaxAge.
func (c *NodeCollector) NodeUsage(node string) (map[corev1.ResourceName]int64, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if err := c.healthLocked(); err != nil {
		return nil, err
	}
	st := c.nodes[node]
	if st == nil || c.opts.Clock.Since(st.lastSeen) > c.opts.MaxAge {
		return nil, fmt.Errorf("%s has no usage for node %q", c.opts.Name, node)
	}
	out := make(map[corev1.ResourceName]int64, len(st.milli))
	for r, v := range st.milli {
		out[r] = v
	}
	return out, nil
}

// Healthy returns nil when the latest poll succeeded, else why not.
func (c *NodeCollector) Healthy() error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.healthLocked()
}

func (c *NodeCollector) healthLocked() error {
	switch {
	case !c.attempted:
		return fmt.Errorf("%s: no node usage collected yet", c.opts.Name)
	case c.lastErr != nil && c.lastSuccess.IsZero():
		return fmt.Errorf("%s is down (never reached): %w", c.opts.Name, c.lastErr)
	case c.lastErr != nil:
		return fmt.Errorf("%s is down (last reached %s ago): %w", c.opts.Name, c.opts.Clock.Since(c.lastSuccess).Round(time.Second), c.lastErr)
	}
	return nil
}
