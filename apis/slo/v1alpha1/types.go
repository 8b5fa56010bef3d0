package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=nm,categories=accord
// +kubebuilder:printcolumn:name="CPU",type=string,JSONPath=`.status.nodeUsage.cpu`,description="CPU in use on the node"
// +kubebuilder:printcolumn:name="Memory",type=string,JSONPath=`.status.nodeUsage.memory`,description="Memory in use on the node"
// +kubebuilder:printcolumn:name="Updated",type=date,JSONPath=`.status.updateTime`,description="When the usage was last reported"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// NodeMetric is the resource usage really measured on the node it is named after. There is one per
// node; its name is the node's name.
type NodeMetric struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec NodeMetricSpec `json:"spec,omitempty"`
	// +optional
	Status NodeMetricStatus `json:"status,omitempty"`
}

// NodeMetricSpec configures the reporter.
type NodeMetricSpec struct {
	// ReportIntervalSeconds is how often the reporter refreshes the status.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ReportIntervalSeconds *int64 `json:"reportIntervalSeconds,omitempty"`
}

// NodeMetricStatus is the last reported usage.
type NodeMetricStatus struct {
	// UpdateTime is when the usage was measured. Consumers ignore a metric older than their
	// expiration window.
	// +optional
	UpdateTime *metav1.Time `json:"updateTime,omitempty"`

	// NodeUsage is the usage of the whole node, per resource.
	// +optional
	NodeUsage corev1.ResourceList `json:"nodeUsage,omitempty"`

	// PodsUsage is the usage of each pod on the node.
	// +optional
	// +listType=map
	// +listMapKey=namespace
	// +listMapKey=name
	PodsUsage []PodUsage `json:"podsUsage,omitempty"`
}

// PodUsage is the measured usage of one pod.
type PodUsage struct {
	// Namespace of the pod.
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
	// Name of the pod.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Usage of the pod, per resource.
	// +optional
	Usage corev1.ResourceList `json:"usage,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// NodeMetricList is a list of NodeMetrics.
type NodeMetricList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []NodeMetric `json:"items"`
}
