// Package reservation is accord-scheduler's Reservation plugin and the controller that places
// Reservations (scheduling.accord.dev/v1alpha1).
//
// The plugin (PreFilter, Filter) makes an Available Reservation count as used capacity on its node for
// every pod except one of its owners, and places an owner pod on its reservation's node. The Placer
// (started by accord-scheduler when a profile enables the plugin) places each Pending Reservation as
// the profile named by its template's schedulerName would place the pod it stands for, with the
// profile's own Filter and Score plugins, and moves reservations on: Available, Bound once an owner
// pod is placed on the node, Expired when the TTL passes first, Failed when no node fits.
package reservation

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	resourcehelper "k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/clock"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	schedlisters "github.com/accord-sched/accord/pkg/generated/listers/scheduling/v1alpha1"
	"github.com/accord-sched/accord/pkg/scheduler/crcache"
)

// Name is the plugin's name in KubeSchedulerConfiguration profiles.
const Name = "Reservation"

const stateKey fwk.StateKey = Name

// ReasonHeld is the Filter's reason for a node whose free room is held by reservations.
const ReasonHeld = "node(s) have their free resources held by reservations"

// Plugin is the Reservation scheduler plugin.
type Plugin struct {
	lister schedlisters.ReservationLister
	clock  clock.PassiveClock
}

var (
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.FilterPlugin      = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
)

// NewFactory returns the plugin factory; the plugin reads Reservations from cache. It has no args.
func NewFactory(cache *crcache.Cache) func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	return func(ctx context.Context, _ runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		lister, err := cache.Reservations(ctx, h)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Name, err)
		}
		return New(lister, clock.RealClock{}), nil
	}
}

// New returns the plugin reading lister.
func New(lister schedlisters.ReservationLister, c clock.PassiveClock) *Plugin {
	return &Plugin{lister: lister, clock: c}
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

type preFilterState struct {
	// held is, per node, the room held by reservations the pod does not consume.
	held map[string]*room
	// own is the reservation the pod consumes, if any.
	own *schedv1alpha1.Reservation
}

func (s *preFilterState) Clone() fwk.StateData { return s }

// room is an amount of node resources, in the scheduler's units.
type room struct {
	milliCPU, memory, ephemeral int64
	pods                        int
	scalar                      map[corev1.ResourceName]int64
	names                       []string
}

func (r *room) add(rl corev1.ResourceList, pods int) {
	for name, q := range rl {
		switch name {
		case corev1.ResourceCPU:
			r.milliCPU += q.MilliValue()
		case corev1.ResourceMemory:
			r.memory += q.Value()
		case corev1.ResourceEphemeralStorage:
			r.ephemeral += q.Value()
		case corev1.ResourcePods:
		default:
			if r.scalar == nil {
				r.scalar = map[corev1.ResourceName]int64{}
			}
			r.scalar[name] += q.Value()
		}
	}
	r.pods += pods
}

// PreFilter finds the reservations that hold room, and the one the pod consumes: an owner pod is
// only considered for its reservation's node.
func (p *Plugin) PreFilter(_ context.Context, state fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	byNode, own, err := holdingByNode(p.lister, pod, p.clock.Now())
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	s := &preFilterState{own: own, held: map[string]*room{}}
	for node, rs := range byNode {
		r := &room{}
		for _, rsv := range rs {
			r.add(Requests(rsv), 1)
			r.names = append(r.names, rsv.Namespace+"/"+rsv.Name)
		}
		s.held[node] = r
	}
	state.Write(stateKey, s)
	if own != nil {
		return &fwk.PreFilterResult{NodeNames: sets.New(own.Status.NodeName)}, nil
	}
	if len(s.held) == 0 {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return nil, nil
}

// PreFilterExtensions: none; the room held does not depend on other pods.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter rejects a node when the pod does not fit in what its allocatable leaves after the pods on
// it and the reservations held there that the pod does not consume.
func (p *Plugin) Filter(_ context.Context, state fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	d, err := state.Read(stateKey)
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("reading %s state: %w", Name, err))
	}
	s, ok := d.(*preFilterState)
	if !ok {
		return fwk.AsStatus(fmt.Errorf("%s state has type %T", Name, d))
	}
	held := s.held[nodeInfo.Node().Name]
	if held == nil {
		return nil
	}
	if short := shortOf(pod, nodeInfo, held); len(short) > 0 {
		return fwk.NewStatus(fwk.Unschedulable, ReasonHeld).WithError(fmt.Errorf("short of %s on node %s, held by %s",
			strings.Join(short, ", "), nodeInfo.Node().Name, strings.Join(held.names, ", ")))
	}
	return nil
}

// shortOf lists the resources pod lacks on the node once held is taken away.
func shortOf(pod *corev1.Pod, nodeInfo fwk.NodeInfo, held *room) []string {
	want := &room{}
	want.add(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}), 1)
	alloc, used := nodeInfo.GetAllocatable(), nodeInfo.GetRequested()
	var short []string
	check := func(name string, want, alloc, used, held int64) {
		if want > 0 && want > alloc-used-held {
			short = append(short, name)
		}
	}
	check(string(corev1.ResourceCPU), want.milliCPU, alloc.GetMilliCPU(), used.GetMilliCPU(), held.milliCPU)
	check(string(corev1.ResourceMemory), want.memory, alloc.GetMemory(), used.GetMemory(), held.memory)
	check(string(corev1.ResourceEphemeralStorage), want.ephemeral, alloc.GetEphemeralStorage(), used.GetEphemeralStorage(), held.ephemeral)
	check(string(corev1.ResourcePods), 1, int64(alloc.GetAllowedPodNumber()), int64(len(nodeInfo.GetPods())), int64(held.pods))
	names := make([]string, 0, len(want.scalar))
	for n := range want.scalar {
		names = append(names, string(n))
	}
	sort.Strings(names)
	for _, n := range names {
		rn := corev1.ResourceName(n)
		check(n, want.scalar[rn], alloc.GetScalarResources()[rn], used.GetScalarResources()[rn], held.scalar[rn])
	}
	return short
}

// EventsToRegister: a pod this plugin rejected may fit once a reservation changes (Bound, Expired,
// deleted) or room appears on a node (an assigned pod deleted, a node's allocatable grown).
func (p *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: crcache.ReservationResource, ActionType: fwk.Update | fwk.Delete}},
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete}},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable}},
	}, nil
}
