package simulator

import (
	"context"
	"testing"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"

	accordfake "github.com/accord-sched/accord/pkg/generated/clientset/versioned/fake"
	accordinformers "github.com/accord-sched/accord/pkg/generated/informers/externalversions"
)

// TestTwoSimulatorsShareTheFactories: each descheduler profile with SchedulerSimulation builds its
// own Simulator over the descheduler's informer factories. With a scheduler configuration that
// enables the Reservation plugin (the chart's reservationFirst), the second one used to fail at
// start ("indexing reservations: indexer conflict"), found by `make soak` with two profiles.
func TestTwoSimulatorsShareTheFactories(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cfg, err := LoadConfig(profileConfig(t, "NodeCRDResourceFit", "LoadAware", "Reservation"))
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	accordFactory := accordinformers.NewSharedInformerFactory(accordfake.NewSimpleClientset(), 0) //nolint:staticcheck // as newTestEnv
	for _, profile := range []string{"soft", "move"} {
		if _, err := New(ctx, Options{Config: cfg, Client: client, InformerFactory: factory, AccordInformerFactory: accordFactory}); err != nil {
			t.Fatalf("the simulator of descheduler profile %q: %v", profile, err)
		}
	}
	factory.Start(ctx.Done())
	accordFactory.Start(ctx.Done())
	cancel()
	factory.Shutdown()
	accordFactory.Shutdown()
}
