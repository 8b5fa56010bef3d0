package reservation

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	clientsetfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	tf "k8s.io/kubernetes/pkg/scheduler/testing/framework"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	accordfake "github.com/accord-sched/accord/pkg/generated/clientset/versioned/fake"
	"github.com/accord-sched/accord/pkg/scheduler/crcache"
)

const benchNodes = 100

func TestMain(m *testing.M) {
	// The framework records plugin metrics; they must be registered first, as in the scheduler.
	metrics.Register()
	os.Exit(m.Run())
}

// benchReservations is the history of a busy cluster: finished reservations (Bound, Expired,
// Failed), each made for a pod of its own, and live ones (Available), one on each node.
func benchReservations(finished, live int) []runtime.Object {
	now := time.Now()
	var objs []runtime.Object
	phases := []schedv1alpha1.ReservationPhase{schedv1alpha1.ReservationBound, schedv1alpha1.ReservationExpired, schedv1alpha1.ReservationFailed}
	add := func(i int, phase schedv1alpha1.ReservationPhase) {
		r := rsv(fmt.Sprintf("r-%04d", i), fmt.Sprintf("node-%d", i%benchNodes), phase, "100m",
			schedv1alpha1.ReservationOwner{Pod: &schedv1alpha1.ReservationPodOwner{Name: fmt.Sprintf("moved-%04d", i), UID: types.UID(fmt.Sprintf("moved-%04d", i))}},
			schedv1alpha1.ReservationOwner{Controller: &schedv1alpha1.ReservationControllerOwner{Kind: "ReplicaSet", UID: types.UID(fmt.Sprintf("rs-%d", i%50))}})
		r.UID = types.UID(r.Name)
		r.CreationTimestamp.Time = now.Add(-time.Minute)
		r.Spec.TTL.Duration = time.Hour
		objs = append(objs, r)
	}
	for i := range finished {
		add(i, phases[i%len(phases)])
	}
	for i := range live {
		add(finished+i, schedv1alpha1.ReservationAvailable)
	}
	return objs
}

// benchFramework is a real framework with NodeResourcesFit and the Reservation plugin (PreFilter,
// Filter, Reserve) built through its factory, over a fake Accord clientset holding objs.
func benchFramework(b *testing.B, nodes []*corev1.Node, objs ...runtime.Object) framework.Framework {
	_, ctx := ktesting.NewTestContext(b)
	ctx, cancel := context.WithCancel(ctx)
	cache := crcache.NewForClient(accordfake.NewClientset(objs...))
	b.Cleanup(func() { cancel(); cache.Shutdown() })
	client := clientsetfake.NewClientset()
	fitArgs := &schedconfig.NodeResourcesFitArgs{ScoringStrategy: &schedconfig.ScoringStrategy{Type: schedconfig.LeastAllocated,
		Resources: []schedconfig.ResourceSpec{{Name: "cpu", Weight: 1}, {Name: "memory", Weight: 1}}}}
	fw, err := tf.NewFramework(ctx, []tf.RegisterPluginFunc{
		tf.RegisterQueueSortPlugin(queuesort.Name, queuesort.New),
		tf.RegisterBindPlugin(defaultbinder.Name, defaultbinder.New),
		tf.RegisterPluginAsExtensions(noderesources.Name, func(ctx context.Context, _ runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
			return noderesources.NewFit(ctx, fitArgs, h, feature.Features{})
		}, "PreFilter", "Filter"),
		tf.RegisterPluginAsExtensions(Name, NewFactory(cache), "PreFilter", "Filter", "Reserve"),
	}, "accord-scheduler",
		frameworkruntime.WithClientSet(client),
		frameworkruntime.WithInformerFactory(informers.NewSharedInformerFactory(client, 0)),
		frameworkruntime.WithSnapshotSharedLister(internalcache.NewSnapshot(nil, nodes)),
		frameworkruntime.WithPodNominator(nominator{}))
	if err != nil {
		b.Fatal(err)
	}
	return fw
}

// BenchmarkPreFilterFilter measures one pod's PreFilter and Filter on 100 nodes (NodeResourcesFit
// and Reservation, through a real framework), as a scheduling cycle runs them: with no
// reservations, with 1000 finished ones (the history alone), 100 live ones (Available, one per
// node) alone, and both. The pod is of a ReplicaSet that has reservations in the history, none
// live for it.
func BenchmarkPreFilterFilter(b *testing.B) {
	nodes := make([]*corev1.Node, benchNodes)
	for i := range nodes {
		nodes[i] = st.MakeNode().Name(fmt.Sprintf("node-%d", i)).Capacity(map[corev1.ResourceName]string{"cpu": "16", "memory": "64Gi", "pods": "110"}).Obj()
	}
	snap := internalcache.NewSnapshot(nil, nodes)
	infos, err := snap.NodeInfos().List()
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		finished, live int
	}{{"none", 0, 0}, {"finished-1000", 1000, 0}, {"live-100", 0, 100}, {"finished-1000-live-100", 1000, 100}} {
		b.Run(tc.name, func(b *testing.B) {
			fw := benchFramework(b, nodes, benchReservations(tc.finished, tc.live)...)
			pod := st.MakePod().Name("web-x").Namespace("ns").UID("web-x").
				Req(map[corev1.ResourceName]string{"cpu": "500m", "memory": "1Gi"}).Obj()
			pod.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs", UID: "rs-7", Controller: new(true)}}
			pod.CreationTimestamp.Time = time.Now().Add(-time.Hour)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				state := framework.NewCycleState()
				if _, s, _ := fw.RunPreFilterPlugins(ctx, state, pod); !s.IsSuccess() {
					b.Fatal(s)
				}
				for _, ni := range infos {
					if s := fw.RunFilterPlugins(ctx, state, pod, ni); !s.IsSuccess() {
						b.Fatal(s)
					}
				}
			}
		})
	}
}

// nominator is the scheduling queue's nominated pods, by node (the real scheduler's framework always
// has one; the Reservation plugin's PreFilter reads it).
type nominator map[string][]fwk.PodInfo

func (n nominator) AddNominatedPod(klog.Logger, fwk.PodInfo, *fwk.NominatingInfo) {}
func (n nominator) DeleteNominatedPodIfExists(*corev1.Pod)                        {}
func (n nominator) UpdateNominatedPod(klog.Logger, *corev1.Pod, fwk.PodInfo)      {}
func (n nominator) NominatedPodsForNode(node string) []fwk.PodInfo                { return n[node] }
