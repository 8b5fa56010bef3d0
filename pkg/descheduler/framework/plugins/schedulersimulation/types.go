package schedulersimulation

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen=true
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SchedulerSimulationArgs configures the SchedulerSimulation plugin.
type SchedulerSimulationArgs struct {
	metav1.TypeMeta `json:",inline"`

	// SchedulerConfigFile is the KubeSchedulerConfiguration accord-scheduler runs (for example the
	// file its ConfigMap mounts, or manifests/scheduler/config.yaml). Empty: kube-scheduler's
	// default configuration. Either way kube-scheduler's stock default-scheduler profile is
	// simulated too when the file has no profile by that name.
	SchedulerConfigFile string `json:"schedulerConfigFile,omitempty"`
	// Profile is the profile (schedulerName) used for pods whose spec.schedulerName names no
	// simulated profile. Empty: such pods are not admitted.
	Profile string `json:"profile,omitempty"`
	// FlapWindow is how long an eviction is remembered: a replacement of the same owner landing
	// back on the node within it is a flap. Default 1h.
	FlapWindow *metav1.Duration `json:"flapWindow,omitempty"`
	// BackoffBase is the first backoff after a flap; each further flap within the window doubles
	// it. Default 5m.
	BackoffBase *metav1.Duration `json:"backoffBase,omitempty"`
	// BackoffMax caps the backoff. Default 6h.
	BackoffMax *metav1.Duration `json:"backoffMax,omitempty"`
}
