// Package scheme registers the args of Accord's scheduler plugins with kube-scheduler's
// configuration scheme. Import it (the scheduler registry does) before a KubeSchedulerConfiguration
// is loaded: after that, kube-scheduler decodes pluginConfig args for NodeCRDResourceFit and
// LoadAware strictly into Accord's v1 types, defaults them and converts them to the internal types
// in package config, which is what the plugin factories receive.
//
// Registration happens once, in init, into kube-scheduler's own scheme and scheme builders; that
// is how kube-scheduler is extended with out-of-tree args, and nothing changes afterwards.
package scheme

import (
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kubeschedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	kubeschedulerconfigv1 "k8s.io/kubernetes/pkg/scheduler/apis/config/v1"

	"github.com/accord-sched/accord/apis/config"
	configv1 "github.com/accord-sched/accord/apis/config/v1"
)

// Scheme is kube-scheduler's configuration scheme, with Accord's args types registered.
var Scheme = kubeschedulerscheme.Scheme

// Codecs is kube-scheduler's strict codec factory for Scheme.
var Codecs = kubeschedulerscheme.Codecs

func init() {
	AddToScheme(Scheme)
}

// AddToScheme adds the internal and v1 args types, their defaults and conversions to a scheme.
func AddToScheme(s *runtime.Scheme) {
	utilruntime.Must(config.AddToScheme(s))
	utilruntime.Must(configv1.AddToScheme(s))
}

// RegisterArgs registers obj, the args type of the scheduler plugin name, with kube-scheduler's
// configuration schemes as one type for both versions: kind name+"Args" of
// kubescheduler.config.k8s.io/v1 (what a pluginConfig's args decode into, strictly, by their JSON
// names) and of the internal version (what the plugin factory receives: the same value, as there is
// nothing to convert), defaulted by its SetDefaults method when it has one, also for a profile that
// enables the plugin without a pluginConfig. This is how the args of a rule the scheduler shares with
// the descheduler are registered: one struct (pkg/constraints), no per-version types, conversions nor
// defaulting functions in apis/config. Args apis/config already registers (their kind known in the
// internal version as obj's type) are left as they are. It is an error when the kind is taken by
// another type. Call it before the first configuration is decoded (pkg/scheduler/plugins does, in
// init, for every descriptor).
func RegisterArgs(name string, obj runtime.Object) error {
	kind := name + "Args"
	t := reflect.TypeOf(obj)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("args of the scheduler plugin %s: %T is not a pointer to a struct", name, obj)
	}
	conv := kubeschedulerconfigv1.GetPluginArgConversionScheme()
	for _, s := range []*runtime.Scheme{Scheme, conv} {
		internal := config.SchemeGroupVersion.WithKind(kind)
		versioned := configv1.SchemeGroupVersion.WithKind(kind)
		if s.Recognizes(internal) || s.Recognizes(versioned) {
			got, err := s.New(internal)
			if err != nil || reflect.TypeOf(got) != t {
				return fmt.Errorf("args of the scheduler plugin %s: kind %s is registered with another type than %T", name, kind, obj)
			}
			continue
		}
		s.AddKnownTypeWithName(internal, obj)
		s.AddKnownTypeWithName(versioned, obj)
		if _, ok := obj.(interface{ SetDefaults() }); ok {
			s.AddTypeDefaultingFunc(obj, func(o any) { o.(interface{ SetDefaults() }).SetDefaults() })
		}
	}
	return nil
}

// NewStrictCodecs returns a strict codec factory for s, for tests and tools that build their own
// scheme with AddToScheme.
func NewStrictCodecs(s *runtime.Scheme) serializer.CodecFactory {
	return serializer.NewCodecFactory(s, serializer.EnableStrict)
}
