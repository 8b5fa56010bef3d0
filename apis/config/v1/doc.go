// Package v1 holds the versioned (kubescheduler.config.k8s.io/v1) arguments of Accord's scheduler
// plugins, as written in a KubeSchedulerConfiguration's pluginConfig, with their defaults and
// their conversions to the internal types in package config.
//
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/accord-sched/accord/apis/config
// +k8s:defaulter-gen=TypeMeta
// +groupName=kubescheduler.config.k8s.io
package v1
