package v1

import (
	"k8s.io/apimachinery/pkg/runtime"
	kubeschedulerconfigv1 "k8s.io/kube-scheduler/config/v1"
)

// GroupName is kube-scheduler's configuration group, which plugin args belong to.
const GroupName = kubeschedulerconfigv1.GroupName

// SchemeGroupVersion is kubescheduler.config.k8s.io/v1.
var SchemeGroupVersion = kubeschedulerconfigv1.SchemeGroupVersion

var (
	// localSchemeBuilder is kube-scheduler's own v1 SchemeBuilder. kube-scheduler builds both its
	// configuration scheme and the scheme it defaults and converts plugin args with from it, so the
	// args types, defaults and conversions must be registered there; the generated conversion file
	// registers into it too.
	localSchemeBuilder = &kubeschedulerconfigv1.SchemeBuilder
	// ownSchemeBuilder registers only this package's types, defaults and conversions.
	ownSchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes, RegisterDefaults, RegisterConversions)
	// AddToScheme adds the v1 args types, their defaults and conversions to a scheme.
	AddToScheme = ownSchemeBuilder.AddToScheme
)

func init() {
	localSchemeBuilder.Register(addKnownTypes, RegisterDefaults)
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&NodeCRDResourceFitArgs{},
		&LoadAwareArgs{},
	)
	return nil
}
