package removeduplicates

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/internal/pluginutil"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// RemoveDuplicatesArgs are the upstream plugin's args.
type RemoveDuplicatesArgs struct {
	metav1.TypeMeta `json:",inline"`

	Namespaces *pluginutil.Namespaces `json:"namespaces,omitempty"`
	// ExcludeOwnerKinds: pods owned by one of these kinds are never duplicates.
	ExcludeOwnerKinds []string `json:"excludeOwnerKinds,omitempty"`
}
