package plugins

import (
	"slices"
	"testing"

	"github.com/accord-sched/accord/apis/config"
	"github.com/accord-sched/accord/pkg/descheduler/framework"
	schedplugins "github.com/accord-sched/accord/pkg/scheduler/plugins"
)

// TestDescriptorsBuildTheRegistries: the one list gives a factory to every plugin and its args type
// to every plugin with args, each name once.
func TestDescriptorsBuildTheRegistries(t *testing.T) {
	reg, args, err := framework.Registries(Descriptors())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range Descriptors() {
		if reg[d.Name] == nil {
			t.Errorf("%s: no factory", d.Name)
		}
		if (d.Args == nil) != (args[d.Name] == nil) {
			t.Errorf("%s: args type %T, registered %T", d.Name, d.Args, args[d.Name])
		}
	}
	if len(reg) != len(Descriptors()) {
		t.Errorf("registry has %d plugins, want %d", len(reg), len(Descriptors()))
	}
	if _, _, err := framework.Registries(append(Descriptors(), Descriptors()[0])); err == nil {
		t.Error("a name listed twice is accepted")
	}
}

// TestEverySchedulerArgsAreFollowed: every accord-scheduler plugin with args has a descheduler
// plugin whose args follow them, or says why not (Descriptor.NotFollowed); a scheduler plugin added
// with args and neither fails here.
func TestEverySchedulerArgsAreFollowed(t *testing.T) {
	if names := Unfollowed(schedplugins.Descriptors(), Descriptors()); len(names) > 0 {
		t.Errorf("scheduler plugins %v have args no descheduler plugin follows: implement framework.SchedulerFollower on the descheduler args that enforce the same rule, or set NotFollowed in their scheduler descriptor", names)
	}
	added := append(schedplugins.Descriptors(), schedplugins.Descriptor{Name: "NewRule", Args: &config.LoadAwareArgs{}})
	if got := Unfollowed(added, Descriptors()); !slices.Equal(got, []string{"NewRule"}) {
		t.Errorf("a scheduler plugin with args and no follower: Unfollowed = %v, want [NewRule]", got)
	}
	added[len(added)-1].NotFollowed = "only the scheduler enforces it"
	if got := Unfollowed(added, Descriptors()); len(got) > 0 {
		t.Errorf("with NotFollowed set: Unfollowed = %v, want none", got)
	}
}
