package monitoring

import (
	"encoding/json"
)

// Query is one PromQL query of a panel and its series' legend (Grafana's legendFormat).
type Query struct {
	Expr, Legend string
}

// Panel is a time-series panel of the dashboard; a panel with Row set starts a row titled Title.
type Panel struct {
	Row         bool
	Title       string
	Description string
	// Unit is Grafana's unit of the values (s, ops, percentunit, short).
	Unit    string
	Queries []Query
}

// accordPlugins are accord-scheduler's plugins, as kube-scheduler's metrics label them.
const accordPlugins = `NodeCRDResourceFit|LoadAware|Reservation`

// panels is the dashboard, row by row (two panels a line).
var panels = []Panel{
	{Row: true, Title: "Scheduling (accord-scheduler)"},
	{Title: "Scheduling attempts by result", Unit: "ops",
		Description: "Pods accord-scheduler tried to schedule per second, by profile and result (scheduled, unschedulable, error).",
		Queries:     []Query{{`sum by (profile, result) (rate(scheduler_schedule_attempts_total[5m]))`, "{{profile}} {{result}}"}}},
	{Title: "Scheduling attempt latency", Unit: "s",
		Description: "The 50th and 99th percentile of one scheduling attempt (the algorithm and binding), by profile.",
		Queries: []Query{
			{`histogram_quantile(0.99, sum by (le, profile) (rate(scheduler_scheduling_attempt_duration_seconds_bucket[5m])))`, "p99 {{profile}}"},
			{`histogram_quantile(0.5, sum by (le, profile) (rate(scheduler_scheduling_attempt_duration_seconds_bucket[5m])))`, "p50 {{profile}}"},
		}},
	{Title: "Plugin latency (p99)", Unit: "s",
		Description: "The 99th percentile of a call of each plugin at each extension point (kube-scheduler samples the plugin calls it times).",
		Queries:     []Query{{`histogram_quantile(0.99, sum by (le, plugin, extension_point) (rate(scheduler_plugin_execution_duration_seconds_bucket[5m])))`, "{{plugin}} {{extension_point}}"}}},
	{Title: "Unschedulable pods by Accord plugin", Unit: "short",
		Description: "Pods waiting as unschedulable with an Accord plugin's Filter among the reasons: NodeCRDResourceFit (no ClusterScopedResource offers a requested resource), LoadAware (over a usage threshold), Reservation (the room is held for another pod). The FailedScheduling Events name the resource or threshold.",
		Queries:     []Query{{`sum by (plugin, profile) (scheduler_unschedulable_pods{plugin=~"` + accordPlugins + `"})`, "{{plugin}} ({{profile}})"}}},
	{Title: "Accord Filter rejections by reason", Unit: "ops",
		Description: "Nodes rejected per second by an Accord plugin's Filter (one per pod and node tried), by plugin and reason: no_cluster_scoped_resource and resource_not_enabled (NodeCRDResourceFit), over_threshold (LoadAware), held_by_reservation (Reservation).",
		Queries:     []Query{{`sum by (plugin, reason) (rate(accord_scheduler_filter_rejections_total[5m]))`, "{{plugin}} {{reason}}"}}},
	{Title: "Pending pods by queue", Unit: "short",
		Description: "Pods in the scheduling queue: active, backoff, unschedulable, gated.",
		Queries:     []Query{{`sum by (queue) (scheduler_pending_pods)`, "{{queue}}"}}},
	{Title: "Leader", Unit: "short",
		Description: "1 for the replica that holds each component's leader Lease.",
		Queries:     []Query{{`max by (name) (leader_election_master_status{name=~".*accord-(scheduler|descheduler|metrics-reporter)"})`, "{{name}}"}}},

	{Row: true, Title: "Descheduling (accord-descheduler)"},
	{Title: "Cycle duration", Unit: "s",
		Description: "The 50th and 99th percentile of a descheduling cycle (every profile's Deschedule, then Balance).",
		Queries: []Query{
			{`histogram_quantile(0.99, sum by (le) (rate(accord_descheduler_cycle_duration_seconds_bucket[30m])))`, "p99"},
			{`histogram_quantile(0.5, sum by (le) (rate(accord_descheduler_cycle_duration_seconds_bucket[30m])))`, "p50"},
		}},
	{Title: "Cycles completed and skipped", Unit: "short",
		Description: "Cycles completed, and cycles skipped by reason (caches_not_synced: the informers had not re-synced after a broken watch), per hour.",
		Queries: []Query{
			{`sum(increase(accord_descheduler_cycles_total[1h]))`, "completed"},
			{`sum by (reason) (increase(accord_descheduler_cycles_skipped_total[1h]))`, "skipped ({{reason}})"},
		}},
	{Title: "Eviction candidates by SchedulerSimulation verdict", Unit: "short",
		Description: "Candidates the profiles nominated, per hour, by SchedulerSimulation's verdict (evict, blocked) and reason (admitted, infeasible, same_node, predicted_node_flagged, flap_backoff, error, pod_intrinsic).",
		Queries:     []Query{{`sum by (verdict, reason) (increase(accord_descheduler_simulation_decisions_total[1h]))`, "{{verdict}} ({{reason}})"}}},
	{Title: "Evictions by plugin and result", Unit: "short",
		Description: "Eviction attempts per hour by plugin and result (success, error, dry-run, soft, background).",
		Queries:     []Query{{`sum by (plugin, result) (increase(accord_descheduler_pods_evicted_total[1h]))`, "{{plugin}} {{result}}"}}},
	{Title: "Evictions held by budget or window", Unit: "short",
		Description: "Nominated pods not evicted, per hour, by reason (workload_budget, window_closed) and profile; and the evictions in progress (soft, background).",
		Queries: []Query{
			{`sum by (reason, profile) (increase(accord_descheduler_evictions_held_total[1h]))`, "held: {{reason}} ({{profile}})"},
			{`sum by (kind) (accord_descheduler_evictions_in_progress)`, "in progress: {{kind}}"},
		}},
	{Title: "Simulation time", Unit: "s",
		Description: "The 50th and 99th percentile of one scheduling simulation of an eviction candidate, by profile.",
		Queries: []Query{
			{`histogram_quantile(0.99, sum by (le, profile) (rate(accord_descheduler_simulation_duration_seconds_bucket[30m])))`, "p99 {{profile}}"},
			{`histogram_quantile(0.5, sum by (le, profile) (rate(accord_descheduler_simulation_duration_seconds_bucket[30m])))`, "p50 {{profile}}"},
		}},
	{Title: "Replacements: predicted node or elsewhere", Unit: "short",
		Description: "Replacements of admitted evictions per hour by whether they landed on the node SchedulerSimulation predicted, and flaps (back on the node their predecessor left).",
		Queries: []Query{
			{`sum by (result) (increase(accord_descheduler_simulation_landings_total[1h]))`, "{{result}}"},
			{`sum(increase(accord_descheduler_flaps_total[1h]))`, "flaps"},
		}},
	{Title: "Plugin failures", Unit: "short",
		Description: "Descheduler plugin calls that returned an error or panicked, per hour.",
		Queries:     []Query{{`sum by (plugin, extension_point) (increase(accord_descheduler_plugin_failures_total[1h]))`, "{{plugin}} {{extension_point}}"}}},

	{Row: true, Title: "Reservations and migrations"},
	{Title: "Reservations by phase", Unit: "short",
		Description: "Reservation statuses accord-scheduler wrote per hour: Available (placed), Bound (consumed by its pod), Failed (not placed, by reason), Expired (TTL passed unused).",
		Queries:     []Query{{`sum by (phase, reason) (increase(accord_scheduler_reservation_transitions_total[1h]))`, "{{phase}} ({{reason}})"}}},
	{Title: "Pod migrations by phase", Unit: "short",
		Description: "PodMigrations that entered each phase per hour (Pending, Running, Succeeded, Failed, Aborted).",
		Queries:     []Query{{`sum by (phase) (increase(accord_descheduler_pod_migration_transitions_total[1h]))`, "{{phase}}"}}},

	{Row: true, Title: "NodeMetrics (accord-metrics-reporter)"},
	{Title: "Source errors and skipped nodes", Unit: "short",
		Description: "Failed readings of the usage source, and node reports not written because the source had no new sample of the node (their NodeMetrics go stale), per hour.",
		Queries: []Query{
			{`sum by (source) (increase(accord_metrics_reporter_source_errors_total[1h]))`, "source errors ({{source}})"},
			{`sum by (source) (increase(accord_metrics_reporter_nodes_skipped_total[1h]))`, "nodes skipped ({{source}})"},
		}},
	{Title: "NodeMetric age (oldest 20 nodes)", Unit: "s",
		Description: "Seconds since each node's NodeMetric was last written (status.updateTime), the 20 oldest. LoadAware and LowNodeLoad ignore a NodeMetric older than nodeMetricExpirationSeconds (180 s by default).",
		Queries:     []Query{{`topk(20, time() - max by (node) (accord_metrics_reporter_nodemetric_update_timestamp_seconds))`, "{{node}}"}}},
	{Title: "Estimated vs reported usage per node", Unit: "percentunit",
		Description: "Each node's usage of a threshold resource over its allocatable, as accord-descheduler's LowNodeLoad saw it at its last cycle: reported by the NodeMetric, and estimated (the reported usage adjusted for pods the metric does not count yet, as LoadAware estimates it: the usage compared with the thresholds). The 20 nodes with the highest estimate per resource; nodes without a fresh NodeMetric have no series.",
		Queries: []Query{
			{`topk by (resource) (20, max by (node, resource) (accord_descheduler_node_usage_estimated_ratio))`, "{{node}} {{resource}} estimated"},
			{`max by (node, resource) (accord_descheduler_node_usage_reported_ratio) and on (node, resource) topk by (resource) (20, max by (node, resource) (accord_descheduler_node_usage_estimated_ratio))`, "{{node}} {{resource}} reported"},
		}},
	{Title: "NodeMetric writes", Unit: "ops",
		Description: "NodeMetric writes per second by operation (create, apply-status) and result.",
		Queries:     []Query{{`sum by (operation, result) (rate(accord_metrics_reporter_writes_total[5m]))`, "{{operation}} {{result}}"}}},
	{Title: "Report round duration", Unit: "s",
		Description: "The 99th percentile of one report round, its writes included.",
		Queries:     []Query{{`histogram_quantile(0.99, sum by (le) (rate(accord_metrics_reporter_round_duration_seconds_bucket[30m])))`, "p99"}}},
}

// Dashboard returns the Grafana dashboard (JSON, schema 39) of panels: a data source variable, rows
// and time-series panels two a line.
func Dashboard() ([]byte, error) {
	type obj = map[string]any
	var out []obj
	id, x, y := 1, 0, 0
	for _, p := range panels {
		if p.Row {
			if x != 0 {
				x, y = 0, y+8
			}
			out = append(out, obj{"type": "row", "id": id, "title": p.Title, "collapsed": false, "panels": []any{},
				"gridPos": obj{"h": 1, "w": 24, "x": 0, "y": y}})
			id, y = id+1, y+1
			continue
		}
		var targets []obj
		for i, q := range p.Queries {
			targets = append(targets, obj{"refId": string(rune('A' + i)), "expr": q.Expr, "legendFormat": q.Legend,
				"datasource": obj{"type": "prometheus", "uid": "${datasource}"}})
		}
		out = append(out, obj{"type": "timeseries", "id": id, "title": p.Title, "description": p.Description,
			"datasource":  obj{"type": "prometheus", "uid": "${datasource}"},
			"gridPos":     obj{"h": 8, "w": 12, "x": x, "y": y},
			"fieldConfig": obj{"defaults": obj{"unit": p.Unit}, "overrides": []any{}},
			"options":     obj{"legend": obj{"displayMode": "list", "placement": "bottom"}, "tooltip": obj{"mode": "multi"}},
			"targets":     targets})
		id++
		if x == 0 {
			x = 12
		} else {
			x, y = 0, y+8
		}
	}
	d := obj{
		"title": "Accord", "uid": "accord", "tags": []string{"accord"}, "schemaVersion": 39, "version": 1,
		"editable": true, "refresh": "30s", "time": obj{"from": "now-6h", "to": "now"},
		"description": "accord-scheduler, accord-descheduler and accord-metrics-reporter (manifests/monitoring; the alert runbook is docs/runbook.md).",
		"templating":  obj{"list": []obj{{"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus"}}},
		"panels":      out,
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
