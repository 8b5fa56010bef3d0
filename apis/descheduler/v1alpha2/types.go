package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DeschedulerPolicy is the descheduler's policy file.
type DeschedulerPolicy struct {
	metav1.TypeMeta `json:",inline"`

	// Profiles are run in order: every profile's Deschedule plugins, then every profile's Balance
	// plugins.
	Profiles []DeschedulerProfile `json:"profiles,omitempty"`

	// NodeSelector is a label selector, in the kubectl string form (`a=b,c!=d`), limiting the nodes
	// the profiles operate over.
	// +optional
	NodeSelector *string `json:"nodeSelector,omitempty"`

	// MaxNoOfPodsToEvictPerNode bounds the evictions from one node in one cycle. When no limit is set
	// at all, Accord applies safe defaults (see pkg/descheduler/evictions).
	// +optional
	MaxNoOfPodsToEvictPerNode *int32 `json:"maxNoOfPodsToEvictPerNode,omitempty"`
	// MaxNoOfPodsToEvictPerNamespace bounds the evictions from one namespace in one cycle.
	// +optional
	MaxNoOfPodsToEvictPerNamespace *int32 `json:"maxNoOfPodsToEvictPerNamespace,omitempty"`
	// MaxNoOfPodsToEvictTotal bounds the evictions of one cycle.
	// +optional
	MaxNoOfPodsToEvictTotal *int32 `json:"maxNoOfPodsToEvictTotal,omitempty"`

	// MaxMigratingPerWorkload bounds, per workload (the pod's top controller: a Deployment through its
	// ReplicaSets, a StatefulSet, a Job, ...), the pods this descheduler evicted whose replacement is
	// not yet Ready, as Koordinator's maxMigratingPerWorkload: an integer or a percentage of the
	// workload's replicas. Unset: Koordinator's default by replica count (above 10 replicas 10%,
	// 4 to 10 replicas 2, otherwise 1). Accord-only: upstream's descheduler has no such field.
	// +optional
	MaxMigratingPerWorkload *intstr.IntOrString `json:"maxMigratingPerWorkload,omitempty"`
	// MaxUnavailablePerWorkload bounds, per workload, the pods unavailable at once, counting those
	// NotReady or Pending for other reasons, as Koordinator's maxUnavailablePerWorkload. Unset: the
	// same defaults as maxMigratingPerWorkload.
	// +optional
	MaxUnavailablePerWorkload *intstr.IntOrString `json:"maxUnavailablePerWorkload,omitempty"`
	// EvictSingleReplicaWorkloads lets the descheduler evict the pod of a one-replica workload;
	// by default it is left alone.
	// +optional
	EvictSingleReplicaWorkloads *bool `json:"evictSingleReplicaWorkloads,omitempty"`

	// GracePeriodSeconds is put into the DeleteOptions of every eviction when set.
	// +optional
	GracePeriodSeconds *int64 `json:"gracePeriodSeconds,omitempty"`
	// EvictionFailureEventNotification makes a failed eviction emit a Warning Event on the pod.
	// +optional
	EvictionFailureEventNotification *bool `json:"evictionFailureEventNotification,omitempty"`

	// MetricsCollector enables collection of node usage from metrics.k8s.io. Deprecated (as
	// upstream): use a metricsProviders entry with source KubernetesMetrics.
	// +optional
	MetricsCollector *MetricsCollector `json:"metricsCollector,omitempty"`
	// MetricsProviders are the sources of real node utilization that plugins (LowNodeUtilization's
	// metricsUtilization) read; each source at most once.
	// +optional
	MetricsProviders []MetricsProvider `json:"metricsProviders,omitempty"`
}

// MetricsSource names a source of real utilization: KubernetesMetrics or Prometheus.
type MetricsSource string

// The metrics sources.
const (
	// KubernetesMetrics is the resource metrics API, metrics.k8s.io (served by metrics-server).
	KubernetesMetrics MetricsSource = "KubernetesMetrics"
	// PrometheusMetrics is a Prometheus server's HTTP query API.
	PrometheusMetrics MetricsSource = "Prometheus"
)

// MetricsCollector is the deprecated switch for metrics.k8s.io collection.
type MetricsCollector struct {
	// Enabled collects node usage from metrics.k8s.io.
	Enabled bool `json:"enabled,omitempty"`
}

// MetricsProvider configures one source of real utilization.
type MetricsProvider struct {
	// Source is KubernetesMetrics or Prometheus.
	Source MetricsSource `json:"source,omitempty"`
	// Prometheus configures the Prometheus source; required when source is Prometheus.
	// +optional
	Prometheus *Prometheus `json:"prometheus,omitempty"`
}

// Prometheus is where a Prometheus server is and how to authenticate to it.
type Prometheus struct {
	// URL of the Prometheus server, e.g. http://prometheus.monitoring.svc:9090.
	URL string `json:"url,omitempty"`
	// AuthToken is sent as a bearer token. When not set, the token of the service account the
	// descheduler's pod runs as is sent (none when running outside a pod).
	// +optional
	AuthToken *AuthToken `json:"authToken,omitempty"`
}

// AuthToken says where the bearer token for Prometheus is kept.
type AuthToken struct {
	// SecretReference names a Secret whose data key `prometheusAuthToken` holds the token. The
	// descheduler watches it, so a rotated token is used from the next query on.
	SecretReference *SecretReference `json:"secretReference,omitempty"`
}

// SecretReference names a Secret.
type SecretReference struct {
	// Namespace of the Secret.
	Namespace string `json:"namespace,omitempty"`
	// Name of the Secret.
	Name string `json:"name,omitempty"`
}

// DeschedulerProfile is one named set of plugins with their configuration.
type DeschedulerProfile struct {
	Name          string         `json:"name"`
	PluginConfigs []PluginConfig `json:"pluginConfig,omitempty"`
	Plugins       Plugins        `json:"plugins"`
	// NodeSelector replaces the policy's nodeSelector for this profile (Accord addition).
	// +optional
	NodeSelector *string `json:"nodeSelector,omitempty"`
	// EvictionWindows, when set, are the only times the profile evicts (its cycles and its
	// event-triggered controllers); outside them it evicts nothing. Accord-only.
	// +optional
	EvictionWindows []EvictionWindow `json:"evictionWindows,omitempty"`
	// EvictionMode is how the profile evicts the pods its plugins nominate: Evict (the default: the
	// evict plugin, i.e. the Eviction API) or Soft: the pod is annotated
	// descheduler.accord.dev/soft-eviction (and an Event recorded) for its own controller to move it,
	// as Koordinator's SoftEviction; it counts against the caps and its workload budget until it is
	// gone, and the annotation is removed once the profile no longer nominates it. Accord-only.
	// +optional
	EvictionMode EvictionMode `json:"evictionMode,omitempty"`
}

// EvictionMode is how a profile evicts: Evict or Soft.
type EvictionMode string

// The eviction modes.
const (
	// EvictionModeEvict evicts through the profile's evict plugin (the Eviction API).
	EvictionModeEvict EvictionMode = "Evict"
	// EvictionModeSoft annotates the pod for its own controller to move.
	EvictionModeSoft EvictionMode = "Soft"
)

// EvictionWindow is a recurring time of day, on some days of the week, in a time zone.
type EvictionWindow struct {
	// Days the window opens on: Mon, Tue, Wed, Thu, Fri, Sat, Sun, or ranges such as Mon-Fri.
	// Empty: every day.
	// +optional
	Days []string `json:"days,omitempty"`
	// Start is the time of day the window opens, HH:MM or HH:MM:SS.
	Start string `json:"start"`
	// End is the time of day the window closes, HH:MM or HH:MM:SS; an End before Start closes the
	// window on the next day.
	End string `json:"end"`
	// TimeZone is an IANA time zone name (Europe/Berlin); empty: UTC.
	// +optional
	TimeZone string `json:"timeZone,omitempty"`
}

// Plugins lists the plugins enabled or disabled at each extension point.
type Plugins struct {
	Deschedule        PluginSet `json:"deschedule,omitempty"`
	Balance           PluginSet `json:"balance,omitempty"`
	Filter            PluginSet `json:"filter,omitempty"`
	PreEvictionFilter PluginSet `json:"preEvictionFilter,omitempty"`
	// Evict names the plugin performing evictions (Accord addition). Defaults to the Eviction-API
	// evictor.
	Evict PluginSet `json:"evict,omitempty"`
}

// PluginSet is the enabled and disabled plugin names of one extension point.
type PluginSet struct {
	Enabled  []string `json:"enabled,omitempty"`
	Disabled []string `json:"disabled,omitempty"`
}

// PluginConfig carries the arguments of one plugin.
type PluginConfig struct {
	Name string `json:"name"`
	// Args are decoded strictly into the args type the plugin registered.
	Args runtime.RawExtension `json:"args,omitempty"`
}
