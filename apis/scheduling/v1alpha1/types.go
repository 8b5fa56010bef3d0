package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxResourceScore is the highest score a ClusterScopedResource may give a resource.
const MaxResourceScore int64 = 100

// ResourceScore is how good a node is for one resource, from 0 (worst) to 100 (best).
//
// +kubebuilder:validation:Minimum=0
// +kubebuilder:validation:Maximum=100
type ResourceScore int64

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=csres,categories=accord
// +kubebuilder:printcolumn:name="Enabled",type=string,JSONPath=`.spec.resourcesFilter`,description="Resources offered on the node"
// +kubebuilder:printcolumn:name="Scores",type=string,JSONPath=`.spec.resourcesScore`,description="Per-resource scores (0-100)"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ClusterScopedResource describes, for the node it is named after, which resources the node offers
// and how well it serves each. There is one per node; its name is the node's name.
type ClusterScopedResource struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ClusterScopedResourceSpec `json:"spec"`
}

// ClusterScopedResourceSpec is what a node offers.
type ClusterScopedResourceSpec struct {
	// ResourcesFilter says, per resource name, whether the resource is offered on the node. A pod
	// that requests a resource that is absent here or set to false does not fit the node.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) > 0)",message="resource names must not be empty"
	ResourcesFilter map[corev1.ResourceName]bool `json:"resourcesFilter,omitempty"`

	// ResourcesScore says, per resource name, how good the node is for it (0-100). A node's score for
	// a pod is the mean of the scores of the resources the pod requests; an absent resource counts 0.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) > 0)",message="resource names must not be empty"
	ResourcesScore map[corev1.ResourceName]ResourceScore `json:"resourcesScore,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// ClusterScopedResourceList is a list of ClusterScopedResources.
type ClusterScopedResourceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []ClusterScopedResource `json:"items"`
}
