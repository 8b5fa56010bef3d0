// Package removepodshavingtoomanyrestarts is the upstream RemovePodsHavingTooManyRestarts plugin: it
// evicts pods whose containers have restarted podRestartThreshold times or more. See README.md.
//
// +k8s:deepcopy-gen=package
package removepodshavingtoomanyrestarts
