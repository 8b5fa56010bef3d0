// Package lownodeload is the LowNodeLoad balance plugin: it drains nodes whose measured usage (their
// NodeMetric) is over the high thresholds onto nodes under the low thresholds. A node is "hot"
// exactly when the scheduler's LoadAware Filter would reject it with usageThresholds equal to
// highThresholds: both call constraints.CheckLoad. See README.md.
//
// +k8s:deepcopy-gen=package
package lownodeload
