// Package v1alpha1 is accord-metrics-reporter's configuration file format,
// `apiVersion: metricsreporter/v1alpha1`, `kind: MetricsReporterConfiguration`.
//
// +k8s:deepcopy-gen=package
// +k8s:defaulter-gen=TypeMeta
// +groupName=metricsreporter
package v1alpha1
