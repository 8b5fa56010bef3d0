// Package framework defines the descheduling framework: the plugin interfaces, the Handle a plugin is
// given, the Evictor a plugin evicts through, and the Registry that maps plugin names to factories.
//
// A cycle runs the Deschedule extension point of every profile in order, then the Balance extension
// point of every profile in order. Plugins pick pods, check them with Handle().Evictor().Filter and
// PreEvictionFilter, and evict them with Handle().Evictor().Evict, which enforces the per-cycle limits,
// dry-run, metrics and Events, and delegates the eviction itself to the profile's evict plugin.
package framework

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"

	"github.com/accord-sched/accord/apis/config"
	"github.com/accord-sched/accord/pkg/crdcheck"
	"github.com/accord-sched/accord/pkg/descheduler/framework/decision"
	accordclient "github.com/accord-sched/accord/pkg/generated/clientset/versioned"
	accordinformers "github.com/accord-sched/accord/pkg/generated/informers/externalversions"
)

// Plugin is the parent type of every descheduling plugin.
type Plugin interface {
	Name() string
}

// DeschedulePlugin evicts pods that violate a rule, node by node. Deschedule runs before any Balance
// in a cycle.
type DeschedulePlugin interface {
	Plugin
	Deschedule(ctx context.Context, nodes []*corev1.Node) *Status
}

// BalancePlugin evicts pods to even out the cluster. Balance runs after every profile's Deschedule, so
// a later deschedule never undoes a balance.
type BalancePlugin interface {
	Plugin
	Balance(ctx context.Context, nodes []*corev1.Node) *Status
}

// EvictorPlugin decides whether a pod may be evicted. Filter is cheap and is used while selecting
// candidates; PreEvictionFilter may be expensive (it runs right before an eviction, e.g. nodeFit).
// A profile enables evictor plugins at the filter and preEvictionFilter extension points; a pod must
// pass all of them.
type EvictorPlugin interface {
	Plugin
	Filter(pod *corev1.Pod) bool
	PreEvictionFilter(pod *corev1.Pod) bool
}

// EvictPlugin performs an eviction. A profile enables exactly one, at the evict extension point; the
// default uses the policy/v1 Eviction API. When the pod no longer exists, Evict returns an error
// wrapping ErrPodGone (a bare apiserver NotFound is taken to mean the same).
type EvictPlugin interface {
	Plugin
	Evict(ctx context.Context, pod *corev1.Pod, opts EvictOptions) error
}

// Controller is a plugin for the event-triggered mode. It is constructed by its factory like every
// plugin and enabled at the deschedule or balance extension point; with --event-driven its Run is
// started once, runs until ctx is done, and evicts through Handle().Evictor() like any plugin, under
// the same limits, and only on the nodes Handle().NodeSelector() matches. See package controller for a rate-limited workqueue helper.
type Controller interface {
	Plugin
	Run(ctx context.Context)
}

// EvictOptions describes one eviction.
type EvictOptions struct {
	// PluginName is the plugin that asked for the eviction.
	PluginName string
	// Reason says why, for logs and the pod's Event.
	Reason string
	// DeleteOptions are passed to the eviction; the policy's gracePeriodSeconds fills in
	// GracePeriodSeconds when the plugin leaves it nil.
	DeleteOptions *metav1.DeleteOptions
	// PredictedNode is where a preEvictionFilter plugin that is a PlacementJudge (SchedulerSimulation)
	// predicted the pod's replacement (PlacementJudge.PreEvictionFilterFor); the evictor fills it in for the
	// evict plugin ("" when none).
	PredictedNode string
	// RequireReservation asks a reservation-first evict plugin (ReservationFirst) to refuse, rather
	// than evict directly, a pod it would not reserve for (PodMigration sets it).
	RequireReservation bool
	// NoReservation asks a reservation-first evict plugin to evict directly, reserving nothing
	// (a PodMigration in mode EvictDirectly).
	NoReservation bool
	// BeforeEvict, when set, is called by a reservation-first evict plugin once the reservation is
	// placed (its name and node) and before the eviction; an error means no eviction (the
	// reservation is deleted). PodMigration records the step in its status with it.
	BeforeEvict func(ctx context.Context, reservation, node string) error
	// GatesPassed, when set, is called by the Evictor once it has taken this eviction's limits (its
	// slot under the caps, its workload budget) or been refused them, before the evict plugin runs.
	// A plugin that evicts several pods at once (pluginutil.EvictOverlapped) waits for it before
	// deciding the next pod, so the limits go to the pods in the plugin's order rather than in the
	// order their goroutines happen to run.
	GatesPassed func()
}

// Evictor is what a plugin evicts through: the profile's evictor plugins composed with its evict
// plugin, the per-cycle limits, dry-run, metrics and Events.
type Evictor interface {
	// Filter reports whether every filter plugin of the profile lets the pod be evicted.
	Filter(pod *corev1.Pod) bool
	// PreEvictionFilter reports whether every preEvictionFilter plugin lets the pod be evicted.
	PreEvictionFilter(pod *corev1.Pod) bool
	// Evict evicts the pod without running the filters. A nil error means the pod was evicted.
	// Otherwise the error says why not: an *EvictionLimitError (see IsNodeLimit, IsNamespaceLimit,
	// IsTotalLimit) when a limit stopped it, ErrDryRun in dry-run mode (the pod would have been
	// evicted and counts against the limits), an error wrapping ErrPodGone when the pod was already
	// gone (another eviction won a race; nothing to do, see IsPodGone), or the evict plugin's error
	// (for the Eviction API, a TooManyRequests error when a PodDisruptionBudget forbids it).
	Evict(ctx context.Context, pod *corev1.Pod, opts EvictOptions) error
	// CheckLimits returns the limit error (*EvictionLimitError) Evict would return now for the pod
	// because of the cycle's eviction limits, or nil. It reserves nothing. Evict (the function) asks
	// it before PreEvictionFilter, so that a pod no limit would let go is not simulated (nor
	// admitted into the simulation) for nothing.
	CheckLimits(pod *corev1.Pod) error
	// ExplainPreEviction says what the profile's preEvictionFilter plugins decided on pod the last
	// time it went through PreEvictionFilter in this cycle: the node predicted for its replacement
	// and, when it was refused, the refusing plugin and its reason (PodMigration reports them).
	ExplainPreEviction(pod *corev1.Pod) PreEvictionExplanation
}

// WindowWatcher is implemented by an Evictor whose profile may have eviction windows: OnWindowOpen
// calls fn each time one of the profile's windows opens (evictions it held may go now) until remove
// is called; with no windows fn is never called. An event-triggered controller re-queues what a
// closed window held with it (controller.Queue.RetryWhenWindowsOpen), rather than waiting for its
// back-off. fn runs on the goroutine that saw the edge; keep it cheap.
type WindowWatcher interface {
	OnWindowOpen(fn func()) (remove func())
}

// PodFilter selects pods.
type PodFilter func(pod *corev1.Pod) bool

// Handle is what the framework gives each plugin of a profile.
type Handle interface {
	// ClientSet reaches the apiserver.
	ClientSet() clientset.Interface
	// SharedInformerFactory is the shared factory for built-in types; informers requested from it in a
	// plugin factory are started before the first cycle.
	SharedInformerFactory() informers.SharedInformerFactory
	// AccordInformerFactory is the shared factory for Accord's CRs (ClusterScopedResource, NodeMetric).
	AccordInformerFactory() accordinformers.SharedInformerFactory
	// Evictor evicts pods for this profile.
	Evictor() Evictor
	// GetPodsAssignedToNode returns the pods bound to a node (from the informer cache, through an
	// index on spec.nodeName) that pass filter (all of them when filter is nil).
	GetPodsAssignedToNode(nodeName string, filter PodFilter) ([]*corev1.Pod, error)
	// EventRecorder records Events on behalf of the descheduler.
	EventRecorder() events.EventRecorder
	// ProfileName is the profile the plugin belongs to.
	ProfileName() string
	// NodeSelector is the profile's node selection: the profile's nodeSelector, else the policy's,
	// else everything. A cycle passes Deschedule and Balance the Ready nodes it matches; a Controller
	// must leave alone the nodes it does not match (test with Matches(labels.Set(node.Labels))).
	NodeSelector() labels.Selector
	// MetricsProviders are the policy's sources of real utilization (see MetricsProviders).
	MetricsProviders() MetricsProviders
	// Nodes returns every node matching sel (nil: every node), Ready or not. Inside a descheduling
	// cycle it is the node list the runtime took once at the cycle's start (the one Deschedule and
	// Balance are given a Ready, profile-selected part of), so code that looks at every node for
	// each candidate (nodeFit, a NodeVerdicter) pays for no list of its own; outside a cycle (a
	// Controller's Run) it is a list of the informer cache, kept until the Node informer's next
	// event. The slice is shared: do not modify it.
	Nodes(sel labels.Selector) ([]*corev1.Node, error)
	// ServesCRD reports whether the cluster serves one of Accord's CRDs, as API discovery found at
	// start. A plugin asks before it requests an informer of AccordInformerFactory, because an
	// informer of a resource the cluster does not serve never syncs (see RequireCRD).
	ServesCRD(crd crdcheck.CRD) bool
	// MissingCRPolicy is the profile's rule for nodes without a ClusterScopedResource: the one its
	// enabled plugins' args set (MissingCRPolicyArgs), else config.DefaultMissingCRPolicy.
	MissingCRPolicy() config.MissingCRPolicy
	// AccordClient writes Accord's CRs (the ReservationFirst evict plugin's Reservations); nil when
	// the descheduler was given no such client.
	AccordClient() accordclient.Interface
	// MaxConcurrentMigrations is how many PodMigrations the PodMigration controller moves at once
	// (--max-concurrent-migrations); each still needs a slot of the eviction limits.
	MaxConcurrentMigrations() int
	// DryRun reports whether the descheduler runs with --dry-run: plugins write nothing.
	DryRun() bool
}

// Status is the result of a Deschedule or Balance call; nil or a nil Err means success.
type Status struct {
	Err error
}

// NewStatus returns a Status carrying err (a success when err is nil).
func NewStatus(err error) *Status { return &Status{Err: err} }

// Errorf returns a failed Status.
func Errorf(format string, args ...any) *Status { return &Status{Err: fmt.Errorf(format, args...)} }

// IsSuccess reports whether s is a success.
func (s *Status) IsSuccess() bool { return s == nil || s.Err == nil }

// AsError returns the error of a failed Status and nil for a success.
func (s *Status) AsError() error {
	if s == nil {
		return nil
	}
	return s.Err
}

// NodeVerdicter is implemented by a deschedule or balance plugin that can tell whether a pod, once
// placed on node, would itself be nominated by it again (flagged, and why). The runtime hands every
// enabled plugin of a profile that implements it to the profile's PlacementJudges (SchedulerSimulation),
// which refuse an eviction whose predicted node would be flagged. It must use the same code the
// plugin nominates with.
type NodeVerdicter interface {
	NodeVerdict(pod *corev1.Pod, node *corev1.Node) (flagged bool, reason string)
}

// PodIntrinsicNominator is implemented by a deschedule or balance plugin that nominates pods for
// what they are (age, failures, restarts), not for where they run: evicting such a pod is not a
// placement decision, and a replacement on the same node is no loop. The runtime tells the
// profile's PlacementJudges (SchedulerSimulation, which then records its prediction but never blocks
// those nominations).
type PodIntrinsicNominator interface {
	// NominatesPodIntrinsically is true when every nomination of the plugin is pod-intrinsic.
	NominatesPodIntrinsically() bool
}

// CycleHook is implemented by a plugin that wants to know when a descheduling cycle starts and
// ends (SchedulerSimulation's snapshot, DefaultEvictor's nodeFit totals). RunCycle calls BeginCycle
// on every such plugin of every profile before the first Deschedule and EndCycle after the last
// Balance. The cycle's node list needs no hook: see Handle.Nodes.
type CycleHook interface {
	BeginCycle(ctx context.Context)
	EndCycle(ctx context.Context)
}

// Warmer is implemented by a plugin with state derived from the informers' objects that costs less
// built once ahead of time than inside the first cycle or the first event (SchedulerSimulation: the
// scheduler snapshot and its label index). The descheduler calls Warm on every such plugin of every
// profile once, after its caches synced and before it reports ready (see Descheduler.Warm); a plugin
// whose Warm fails builds that state when first used, as it would without Warm.
type Warmer interface {
	Warm(ctx context.Context) error
}

// PlacementJudge is the one optional interface of an evictor plugin: a preEvictionFilter plugin
// that judges a candidate by where its replacement would be placed and by the plugin that nominated
// it. SchedulerSimulation is the in-tree one; an out-of-tree evictor that wants the same seat (its own
// placement model, say) implements it and is enabled at preEvictionFilter. For every PlacementJudge
// among a profile's preEvictionFilter plugins the runtime
//   - calls SetNominators once, when the profile is built, with the profile's enabled deschedule and
//     balance plugins (Deschedule's first, each once, in policy order);
//   - calls PreEvictionFilterFor, with the nominating plugin's name ("" from callers that cannot
//     name one), instead of PreEvictionFilter;
//   - keeps the prediction PreEvictionFilterFor returns with the admitted pod until the pod's
//     eviction: its node goes to EvictOptions.PredictedNode (the first judge's that moves the
//     pod), and the prediction into the decision recorded on the pod's Event (its message into the
//     Event's note). The judge's own per-cycle state may be gone by then (a cycle beginning while
//     an event-triggered controller's eviction is on its way), so the evictor never asks for it
//     again;
//
// and the descheduler waits for HasSynced, with the informers, before its first cycle, so that a
// judge with state of its own fed by informer handlers decides on complete state.
type PlacementJudge interface {
	EvictorPlugin
	SetNominators(nominators []Nominator)
	// PreEvictionFilterFor is PreEvictionFilter knowing the nominating plugin; for a pod it admits
	// it also returns its prediction for the replacement (nil when it has none to tell).
	PreEvictionFilterFor(pod *corev1.Pod, nominator string) (admitted bool, prediction *decision.Prediction)
	// RefusalMessage returns why the judge refused pod in the current cycle (SchedulerSimulation:
	// the scheduler's "0/N nodes are available: ..." message), "" when it did not refuse it.
	RefusalMessage(pod *corev1.Pod) string
	HasSynced() bool
}

// Nominator is one deschedule or balance plugin of a profile, as PlacementJudge.SetNominators gets it.
type Nominator struct {
	// Name is the plugin's name.
	Name string
	// Verdicter is the plugin when it is a NodeVerdicter, else nil.
	Verdicter NodeVerdicter
	// PodIntrinsic: the plugin is a PodIntrinsicNominator that nominates pod-intrinsically.
	PodIntrinsic bool
}
