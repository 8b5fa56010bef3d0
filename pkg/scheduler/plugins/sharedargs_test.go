package plugins

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/accord-sched/accord/pkg/scheduler/crcache"
)

// LabelCap stands for a rule's shared args as pkg/constraints declares them: JSON names, defaults.
type LabelCap struct {
	LabelKey   string `json:"labelKey,omitempty"`
	MaxPerNode *int32 `json:"maxPerNode,omitempty"`
}

func (c *LabelCap) SetDefaults() {
	if c.LabelKey == "" {
		c.LabelKey = "example.accord.dev/capped"
	}
	if c.MaxPerNode == nil {
		n := int32(2)
		c.MaxPerNode = &n
	}
}

// LabelCapArgs stand for the rule's scheduler args: TypeMeta and the shared struct, inline; nothing
// in apis/config.
type LabelCapArgs struct {
	metav1.TypeMeta `json:",inline"`
	LabelCap        `json:",inline"`
}

func (a *LabelCapArgs) DeepCopyObject() runtime.Object {
	c := *a
	if a.MaxPerNode != nil {
		n := *a.MaxPerNode
		c.MaxPerNode = &n
	}
	return &c
}

// otherLabelCapArgs is another type claiming the same kind.
type otherLabelCapArgs struct{ LabelCapArgs }

func (a *otherLabelCapArgs) DeepCopyObject() runtime.Object { c := *a; return &c }

// TestSharedArgsRegisteredOnce: a descriptor whose args type apis/config does not register (the
// shape of an in-tree shared rule: one struct for both versions) is registered by RegisterArgs, and
// a KubeSchedulerConfiguration then decodes its pluginConfig strictly into that type, defaulted by
// its SetDefaults, with and without a pluginConfig entry, which is what the factory receives.
func TestSharedArgsRegisteredOnce(t *testing.T) {
	var got []*LabelCapArgs
	d := Descriptor{Name: "LabelCap", Args: &LabelCapArgs{}, Factory: func(*crcache.Cache) frameworkruntime.PluginFactory {
		return func(_ context.Context, obj runtime.Object, _ fwk.Handle) (fwk.Plugin, error) {
			a, ok := obj.(*LabelCapArgs)
			if !ok {
				return nil, fmt.Errorf("args of type %T", obj)
			}
			got = append(got, a)
			return nil, nil
		}
	}}
	descriptors := append(Descriptors(), d)
	for range 2 { // registering twice (the list again) changes nothing
		if err := RegisterArgs(descriptors); err != nil {
			t.Fatal(err)
		}
	}

	decode := func(pluginConfig string) (*LabelCapArgs, error) {
		doc := "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: s\n  plugins:\n    filter:\n      enabled:\n      - name: LabelCap\n" + pluginConfig
		obj, _, err := schedscheme.Codecs.UniversalDecoder().Decode([]byte(doc), nil, nil)
		if err != nil {
			return nil, err
		}
		for _, pc := range obj.(*schedconfig.KubeSchedulerConfiguration).Profiles[0].PluginConfig {
			if pc.Name == d.Name {
				if _, err := Registry([]Descriptor{d}, crcache.New())[d.Name](context.Background(), pc.Args, nil); err != nil {
					return nil, err
				}
				return got[len(got)-1], nil
			}
		}
		return nil, fmt.Errorf("no pluginConfig for %s after defaulting", d.Name)
	}

	a, err := decode("")
	if err != nil {
		t.Fatalf("no pluginConfig: %v", err)
	}
	if a.LabelKey != "example.accord.dev/capped" || a.MaxPerNode == nil || *a.MaxPerNode != 2 {
		t.Errorf("no pluginConfig: args %+v, want the defaults", a.LabelCap)
	}
	a, err = decode("  pluginConfig:\n  - name: LabelCap\n    args:\n      maxPerNode: 5\n")
	if err != nil {
		t.Fatalf("with a pluginConfig: %v", err)
	}
	if a.LabelKey != "example.accord.dev/capped" || a.MaxPerNode == nil || *a.MaxPerNode != 5 {
		t.Errorf("with a pluginConfig: args %+v, want maxPerNode 5 and the default labelKey", a.LabelCap)
	}
	if _, err := decode("  pluginConfig:\n  - name: LabelCap\n    args:\n      maxPerNod: 5\n"); err == nil || !strings.Contains(err.Error(), `unknown field "maxPerNod"`) {
		t.Errorf("an unknown field: %v, want a strict decoding error naming it", err)
	}

	if err := RegisterArgs([]Descriptor{{Name: "LabelCap", Args: &otherLabelCapArgs{}}}); err == nil || !strings.Contains(err.Error(), "LabelCapArgs is registered with another type") {
		t.Errorf("another type for the kind: %v, want an error", err)
	}
}
