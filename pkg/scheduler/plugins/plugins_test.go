package plugins

import (
	"fmt"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"

	_ "github.com/accord-sched/accord/apis/config/scheme"
	"github.com/accord-sched/accord/pkg/scheduler/crcache"
)

// TestDescriptorsArgsAreRegistered: a profile that enables a plugin, with no pluginConfig, decodes
// (through kube-scheduler's scheme, as --config does) with defaulted args of the descriptor's Args
// type, so the factory receives what it expects; names are unique and every factory is set.
func TestDescriptorsArgsAreRegistered(t *testing.T) {
	names := sets.New[string]()
	for _, d := range Descriptors() {
		if names.Has(d.Name) {
			t.Fatalf("plugin %s is listed twice", d.Name)
		}
		names.Insert(d.Name)
		if d.Factory == nil || d.Factory(crcache.New()) == nil {
			t.Fatalf("plugin %s has no factory", d.Name)
		}
		doc := fmt.Sprintf("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: s\n  plugins:\n    multiPoint:\n      enabled:\n      - name: %s\n", d.Name)
		obj, _, err := schedscheme.Codecs.UniversalDecoder().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", d.Name, err)
		}
		cfg := obj.(*schedconfig.KubeSchedulerConfiguration)
		var got any
		for _, pc := range cfg.Profiles[0].PluginConfig {
			if pc.Name == d.Name {
				got = pc.Args
			}
		}
		switch {
		case d.Args == nil && got != nil:
			t.Errorf("%s: descriptor has no args, but the scheme defaults %T", d.Name, got)
		case d.Args != nil && got == nil:
			t.Errorf("%s: the scheme has no defaulted args for it; register %T in apis/config", d.Name, d.Args)
		case d.Args != nil && reflect.TypeOf(got) != reflect.TypeOf(d.Args):
			t.Errorf("%s: the scheme defaults args of type %T, the descriptor says %T", d.Name, got, d.Args)
		}
	}
}

func TestRegistryHoldsEveryDescriptor(t *testing.T) {
	r := Registry(Descriptors(), crcache.New())
	for _, d := range Descriptors() {
		if r[d.Name] == nil {
			t.Errorf("registry lacks %s", d.Name)
		}
	}
	if len(r) != len(Descriptors()) {
		t.Errorf("registry has %d plugins, want %d", len(r), len(Descriptors()))
	}
}
