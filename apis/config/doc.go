// Package config holds the internal versions of the arguments of Accord's scheduler plugins. They
// live in kube-scheduler's own API group (kubescheduler.config.k8s.io), so a
// KubeSchedulerConfiguration's pluginConfig carries them like the in-tree plugins' args, and the
// scheduler decodes, defaults and converts them with its own scheme (see package scheme).
//
// +k8s:deepcopy-gen=package
// +groupName=kubescheduler.config.k8s.io
package config
