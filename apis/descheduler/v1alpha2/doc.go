// Package v1alpha2 is the versioned policy file format, `apiVersion: descheduler/v1alpha2`,
// `kind: DeschedulerPolicy`. Its fields match the upstream kubernetes-sigs/descheduler v1alpha2 format
// so that existing policy files are read unchanged; `plugins.evict` and `profiles[].nodeSelector` are
// Accord additions.
//
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/accord-sched/accord/apis/descheduler
// +k8s:defaulter-gen=TypeMeta
// +groupName=descheduler
package v1alpha2
