// Package descheduler holds the internal (hub) types of Accord's descheduler policy. The versioned
// wire format lives in v1alpha2; files are decoded into v1alpha2, defaulted, and converted here.
//
// +k8s:deepcopy-gen=package
// +groupName=descheduler
package descheduler
