package config

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// GroupName is kube-scheduler's configuration group, which plugin args belong to.
const GroupName = schedconfig.GroupName

// SchemeGroupVersion is the internal version of kube-scheduler's configuration group.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: runtime.APIVersionInternal}

var (
	// localSchemeBuilder is kube-scheduler's own internal SchemeBuilder: kube-scheduler builds the
	// scheme it converts plugin args with from it, so the args types must be registered there.
	localSchemeBuilder = &schedconfig.SchemeBuilder
	// ownSchemeBuilder registers only this package's types.
	ownSchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the internal args types to a scheme.
	AddToScheme = ownSchemeBuilder.AddToScheme
)

func init() {
	localSchemeBuilder.Register(addKnownTypes)
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&NodeCRDResourceFitArgs{},
		&LoadAwareArgs{},
	)
	return nil
}
