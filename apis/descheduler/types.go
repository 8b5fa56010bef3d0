package descheduler

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DeschedulerPolicy is the configuration of the descheduler: its profiles and the limits that bound
// how many pods one descheduling cycle may evict.
type DeschedulerPolicy struct {
	metav1.TypeMeta

	// Profiles are run in order: every profile's Deschedule plugins, then every profile's Balance
	// plugins.
	Profiles []DeschedulerProfile

	// NodeSelector is a label selector (in the kubectl string form) limiting the nodes every
	// profile operates over. A profile's own NodeSelector replaces it for that profile.
	NodeSelector *string

	// MaxNoOfPodsToEvictPerNode bounds the evictions from one node in one cycle.
	MaxNoOfPodsToEvictPerNode *int32
	// MaxNoOfPodsToEvictPerNamespace bounds the evictions from one namespace in one cycle.
	MaxNoOfPodsToEvictPerNamespace *int32
	// MaxNoOfPodsToEvictTotal bounds the evictions of one cycle.
	MaxNoOfPodsToEvictTotal *int32

	// MaxMigratingPerWorkload bounds, per workload (the pod's top controller), the pods evicted by
	// this descheduler whose replacement is not yet Ready (Koordinator's maxMigratingPerWorkload):
	// an integer or a percentage of the workload's replicas. Unset: Koordinator's default by
	// replica count (above 10 replicas 10%, 4 to 10 replicas 2, otherwise 1). Across profiles,
	// cycles and the event-triggered controllers.
	MaxMigratingPerWorkload *intstr.IntOrString
	// MaxUnavailablePerWorkload bounds, per workload, the pods unavailable at once, counting those
	// NotReady or Pending for other reasons (Koordinator's maxUnavailablePerWorkload); an eviction
	// that would make more unavailable waits. Unset: the same defaults as MaxMigratingPerWorkload.
	MaxUnavailablePerWorkload *intstr.IntOrString
	// EvictSingleReplicaWorkloads lets the descheduler evict the pod of a workload of one replica;
	// by default such a workload is left alone (its only pod would be down until replaced).
	EvictSingleReplicaWorkloads *bool

	// GracePeriodSeconds is passed to every eviction's DeleteOptions when set.
	GracePeriodSeconds *int64
	// EvictionFailureEventNotification makes a failed eviction emit a Warning Event on the pod.
	EvictionFailureEventNotification *bool

	// MetricsCollector is the deprecated form of a KubernetesMetrics entry in MetricsProviders.
	MetricsCollector *MetricsCollector
	// MetricsProviders are the sources of real node utilization plugins may read (at most one per
	// source).
	MetricsProviders []MetricsProvider
}

// MetricsSource names a source of real utilization.
type MetricsSource string

// The metrics sources.
const (
	// KubernetesMetrics is the resource metrics API, metrics.k8s.io (metrics-server).
	KubernetesMetrics MetricsSource = "KubernetesMetrics"
	// PrometheusMetrics is a Prometheus server's HTTP query API.
	PrometheusMetrics MetricsSource = "Prometheus"
)

// MetricsCollector enables collection from metrics.k8s.io (deprecated upstream in favour of
// MetricsProviders).
type MetricsCollector struct {
	Enabled bool
}

// MetricsProvider configures one source of real utilization.
type MetricsProvider struct {
	Source MetricsSource
	// Prometheus configures the Prometheus source; required when Source is Prometheus.
	Prometheus *Prometheus
}

// Prometheus is where a Prometheus server is and how to authenticate to it.
type Prometheus struct {
	// URL of the server (http or https).
	URL string
	// AuthToken, when set, is sent as a bearer token; when nil, the service account token of the
	// pod the descheduler runs in is sent, if there is one.
	AuthToken *AuthToken
}

// AuthToken says where the bearer token for Prometheus is kept.
type AuthToken struct {
	// SecretReference names a Secret whose data key `prometheusAuthToken` holds the token.
	SecretReference *SecretReference
}

// SecretReference names a Secret.
type SecretReference struct {
	Namespace string
	Name      string
}

// DeschedulerProfile is one named set of plugins with their configuration.
type DeschedulerProfile struct {
	Name          string
	PluginConfigs []PluginConfig
	Plugins       Plugins
	// NodeSelector, when set, replaces the policy's NodeSelector for this profile (Accord addition).
	NodeSelector *string
	// EvictionWindows, when set, are the only times the profile evicts (Accord addition).
	EvictionWindows []EvictionWindow
	// EvictionMode is how the profile evicts: Evict (empty: the evict plugin, the Eviction API) or
	// Soft (the pod is annotated for its controller to move) (Accord addition).
	EvictionMode EvictionMode
}

// EvictionMode is how a profile evicts the pods its plugins nominate.
type EvictionMode string

// The eviction modes.
const (
	// EvictionModeEvict evicts through the profile's evict plugin (the Eviction API); the default.
	EvictionModeEvict EvictionMode = "Evict"
	// EvictionModeSoft annotates the pod (descheduler.accord.dev/soft-eviction) for its own
	// controller to move, as Koordinator's SoftEviction.
	EvictionModeSoft EvictionMode = "Soft"
)

// EvictionWindow is a recurring time of day, on some days of the week, in a time zone.
type EvictionWindow struct {
	// Days: Mon..Sun or ranges (Mon-Fri); empty is every day.
	Days []string
	// Start and End: HH:MM or HH:MM:SS; End before Start closes the window the next day.
	Start string
	End   string
	// TimeZone is an IANA name; empty is UTC.
	TimeZone string
}

// Plugins lists the plugins enabled or disabled at each extension point.
type Plugins struct {
	Deschedule        PluginSet
	Balance           PluginSet
	Filter            PluginSet
	PreEvictionFilter PluginSet
	// Evict names the plugin that performs evictions (Accord addition); at most one is enabled.
	Evict PluginSet
}

// PluginSet is the enabled and disabled plugin names of one extension point.
type PluginSet struct {
	Enabled  []string
	Disabled []string
}

// PluginConfig carries the arguments of one plugin, decoded into the args type the plugin registered.
type PluginConfig struct {
	Name string
	Args runtime.Object
}
