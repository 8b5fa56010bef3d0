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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kubeschedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"

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

// NewStrictCodecs returns a strict codec factory for s, for tests and tools that build their own
// scheme with AddToScheme.
func NewStrictCodecs(s *runtime.Scheme) serializer.CodecFactory {
	return serializer.NewCodecFactory(s, serializer.EnableStrict)
}
