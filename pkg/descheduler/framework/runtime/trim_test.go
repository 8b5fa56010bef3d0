package runtime_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/accord-sched/accord/apis/config"
	"github.com/accord-sched/accord/pkg/descheduler/evictions"
	"github.com/accord-sched/accord/pkg/descheduler/framework/fake"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins"
	"github.com/accord-sched/accord/pkg/descheduler/framework/plugins/defaultevictor"
	fwruntime "github.com/accord-sched/accord/pkg/descheduler/framework/runtime"
	"github.com/accord-sched/accord/pkg/descheduler/metrics"
	"github.com/accord-sched/accord/pkg/descheduler/policy"
)

// trimPolicy runs each in-tree plugin that reads pods in its own profile, with DefaultEvictor
// (evicting local storage and failed bare pods, so that more pods reach the plugins) as its
// filter and without the scheduler simulation every profile has unless it disables it: a
// plugin's nominations depend on the pods alone, not on the order the profiles run in.
// (nodeFit and the scheduler simulation, whose verdicts depend on the moves admitted before them,
// are compared pod by pod: TestTrimmedPodsFitAlike, and TestTrimmedPodsSimulateAlike in
// pkg/descheduler/simulator.)
const trimPolicy = `apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
maxNoOfPodsToEvictPerNode: 100000
maxNoOfPodsToEvictPerNamespace: 100000
maxNoOfPodsToEvictTotal: 100000
profiles:
- name: restarts
  pluginConfig:
  - {name: DefaultEvictor, args: {ignorePvcPods: true, missingCRPolicy: Ignore}}
  - {name: RemovePodsHavingTooManyRestarts, args: {podRestartThreshold: 100, includingInitContainers: true}}
  plugins: {filter: {enabled: [DefaultEvictor]}, preEvictionFilter: {disabled: [SchedulerSimulation]}, deschedule: {enabled: [RemovePodsHavingTooManyRestarts]}}
- name: failed
  pluginConfig:
  - {name: DefaultEvictor, args: {evictFailedBarePods: true, missingCRPolicy: Ignore}}
  - {name: RemoveFailedPods, args: {reasons: [Error, CrashLoopBackOff], includingInitContainers: true, exitCodes: [137]}}
  plugins: {filter: {enabled: [DefaultEvictor]}, preEvictionFilter: {disabled: [SchedulerSimulation]}, deschedule: {enabled: [RemoveFailedPods]}}
- name: lifetime
  pluginConfig:
  - {name: DefaultEvictor, args: {evictLocalStoragePods: true, missingCRPolicy: Ignore}}
  - {name: PodLifeTime, args: {maxPodLifeTimeSeconds: 86400, states: [Running, CrashLoopBackOff]}}
  plugins: {filter: {enabled: [DefaultEvictor]}, preEvictionFilter: {disabled: [SchedulerSimulation]}, deschedule: {enabled: [PodLifeTime]}}
- name: nodeaffinity
  pluginConfig:
  - {name: DefaultEvictor, args: {evictLocalStoragePods: true, missingCRPolicy: Ignore}}
  - {name: RemovePodsViolatingNodeAffinity, args: {nodeAffinityType: [requiredDuringSchedulingIgnoredDuringExecution]}}
  plugins: {filter: {enabled: [DefaultEvictor]}, preEvictionFilter: {disabled: [SchedulerSimulation]}, deschedule: {enabled: [RemovePodsViolatingNodeAffinity]}}
- name: taints
  pluginConfig:
  - {name: DefaultEvictor, args: {evictLocalStoragePods: true, missingCRPolicy: Ignore}}
  - {name: RemovePodsViolatingNodeTaints, args: {includePreferNoSchedule: true}}
  plugins: {filter: {enabled: [DefaultEvictor]}, preEvictionFilter: {disabled: [SchedulerSimulation]}, deschedule: {enabled: [RemovePodsViolatingNodeTaints]}}
- name: antiaffinity
  pluginConfig:
  - {name: DefaultEvictor, args: {evictLocalStoragePods: true, missingCRPolicy: Ignore}}
  plugins: {filter: {enabled: [DefaultEvictor]}, preEvictionFilter: {disabled: [SchedulerSimulation]}, deschedule: {enabled: [RemovePodsViolatingInterPodAntiAffinity]}}
- name: duplicates
  pluginConfig:
  - {name: DefaultEvictor, args: {evictLocalStoragePods: true, missingCRPolicy: Ignore}}
  plugins: {filter: {enabled: [DefaultEvictor]}, preEvictionFilter: {disabled: [SchedulerSimulation]}, balance: {enabled: [RemoveDuplicates]}}
- name: spread
  pluginConfig:
  - {name: DefaultEvictor, args: {evictLocalStoragePods: true, missingCRPolicy: Ignore}}
  plugins: {filter: {enabled: [DefaultEvictor]}, preEvictionFilter: {disabled: [SchedulerSimulation]}, balance: {enabled: [RemovePodsViolatingTopologySpreadConstraint]}}
- name: low
  pluginConfig:
  - {name: DefaultEvictor, args: {evictLocalStoragePods: true, missingCRPolicy: Ignore}}
  - {name: LowNodeUtilization, args: {thresholds: {cpu: 20, memory: 20, pods: 20}, targetThresholds: {cpu: 50, memory: 50, pods: 50}}}
  plugins: {filter: {enabled: [DefaultEvictor]}, preEvictionFilter: {disabled: [SchedulerSimulation]}, balance: {enabled: [LowNodeUtilization]}}
`

var age = regexp.MustCompile(`is [0-9hms.]+ old`)

// choosing are trimPolicy's profiles whose plugin chooses among equivalent pods in the order it
// sees them (which replica of a duplicate, which pod of an overloaded node, which side of an
// anti-affinity conflict): their decisions are compared without the pods' names, the others pod
// by pod. How many pods LowNodeUtilization takes off a node depends on which it takes first, so
// of its decisions only the nodes count, once each. HighNodeUtilization is left out: which nodes
// it drains depends on which pods it moved first, and it reads what LowNodeUtilization reads
// (pluginutil's utilization and fit).
var choosing = map[string]bool{"antiaffinity": true, "duplicates": true, "spread": true, "low": true}

var (
	podName = regexp.MustCompile(`pod ns/p[0-9]+`)
	byNode  = map[string]bool{"low": true}
)

func decisions(t *testing.T, c *fake.Cluster) []string {
	t.Helper()
	p, err := policy.Decode([]byte(trimPolicy), plugins.NewInTreeArgs())
	if err != nil {
		t.Fatal(err)
	}
	reg := plugins.NewInTreeRegistry()
	if errs := policy.Validate(p, reg, plugins.NewInTreeArgs()); len(errs) > 0 {
		t.Fatal(errs)
	}
	var mu sync.Mutex
	var out []string
	d, err := fwruntime.New(t.Context(), p, fwruntime.Options{Client: c.Client, InformerFactory: c.Factory, AccordInformerFactory: c.CRs,
		Registry: reg, DryRun: true, Metrics: metrics.New(), Observer: func(r evictions.Record) {
			mu.Lock()
			defer mu.Unlock()
			if !choosing[r.Profile] {
				// A pod's age in PodLifeTime's reason is read off the clock.
				reason := age.ReplaceAllString(r.Reason, "<age>")
				out = append(out, fmt.Sprintf("%s %s %s/%s %s blockedBy=%q reason=%q err=%v", r.Profile, r.Plugin, r.Pod.Namespace, r.Pod.Name, r.Stage, r.BlockedBy, reason, r.Err))
			} else {
				line := fmt.Sprintf("%s %s %s blockedBy=%q reason=%q dryRun=%v", r.Profile, r.Plugin, r.Stage, r.BlockedBy, podName.ReplaceAllString(r.Reason, "pod <pod>"), r.Err != nil)
				if !byNode[r.Profile] || !slices.Contains(out, line) {
					out = append(out, line)
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	c.Start(t)
	d.RunCycle(context.Background())
	slices.Sort(out)
	return out
}

// TestTrimmedPodsDecideAlike: the descheduler's in-tree plugins that read pods, DefaultEvictor
// (nodeFit on), the evictor's gates and the scheduler simulation take the same decisions over pods
// that have every field informertransform.TrimPod drops as over the same pods trimmed, as
// accord-descheduler's pod informer keeps them. A plugin that starts reading a trimmed field fails
// here once the field changes a decision on these varied pods (TestTrimmedPodsSimulateAlike checks
// the simulation's predictions pod by pod; TestTrimmedFieldsAreTheAuditedOnes keeps TrimPod and its
// audited list equal).
func TestTrimmedPodsDecideAlike(t *testing.T) {
	now := time.Now()
	seen := map[string]bool{}
	for seed := range uint64(4) {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			full := decisions(t, fake.NewUntrimmedCluster(fake.VariedCluster(seed, now)...))
			trimmed := decisions(t, fake.NewCluster(fake.VariedCluster(seed, now)...))
			if !slices.Equal(full, trimmed) {
				t.Errorf("decisions over untrimmed (-) and trimmed (+) pods differ:\n%s", symdiff(full, trimmed))
			}
			for _, d := range full {
				if strings.Contains(d, "err=dry run") || strings.Contains(d, "dryRun=true") {
					seen[strings.Fields(d)[1]] = true
				}
			}
		})
	}
	// Every plugin nominated pods, some were evicted (dry run) and the simulation blocked some.
	for _, p := range []string{"RemovePodsHavingTooManyRestarts", "RemoveFailedPods", "PodLifeTime", "RemovePodsViolatingNodeAffinity",
		"RemovePodsViolatingNodeTaints", "RemovePodsViolatingInterPodAntiAffinity", "RemoveDuplicates",
		"RemovePodsViolatingTopologySpreadConstraint", "LowNodeUtilization"} {
		if !seen[p] {
			t.Errorf("the varied clusters gave %s no pod to evict (dry run): %v", p, seen)
		}
	}
}

// symdiff lists the lines a has more often than b (-) and b more often than a (+), with counts.
func symdiff(a, b []string) string {
	count := map[string]int{}
	for _, x := range a {
		count[x]++
	}
	for _, x := range b {
		count[x]--
	}
	var out []string
	for x, n := range count {
		switch {
		case n > 0:
			out = append(out, fmt.Sprintf("- %dx %s", n, x))
		case n < 0:
			out = append(out, fmt.Sprintf("+ %dx %s", -n, x))
		}
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// verdicts returns DefaultEvictor's Filter and PreEvictionFilter verdicts (nodeFit on: the pod must
// fit another Ready node by requests, ports, affinity, taints and volumes) on every pod of c, by
// name, each asked alone.
func verdicts(t *testing.T, c *fake.Cluster) []string {
	t.Helper()
	pods, err := fwruntime.AddPodNodeIndex(c.Factory)
	if err != nil {
		t.Fatal(err)
	}
	h := &fake.Handle{Cluster: c, Pods: pods, CRPolicy: config.MissingCRPolicyIgnore}
	args := &defaultevictor.DefaultEvictorArgs{NodeFit: true, MissingCRPolicy: config.MissingCRPolicyIgnore, EvictFailedBarePods: true}
	args.SetDefaults()
	pl, err := defaultevictor.New(t.Context(), args, h)
	if err != nil {
		t.Fatal(err)
	}
	ev := pl.(*defaultevictor.DefaultEvictor)
	c.Start(t)
	list, err := c.Factory.Core().V1().Pods().Lister().List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range list {
		out = append(out, fmt.Sprintf("%s filter=%v preEvictionFilter=%v", p.Name, ev.Filter(p), ev.PreEvictionFilter(p)))
	}
	slices.Sort(out)
	return out
}

// TestTrimmedPodsFitAlike: DefaultEvictor's filters, nodeFit included, give every pod the same
// verdict untrimmed and trimmed.
func TestTrimmedPodsFitAlike(t *testing.T) {
	now := time.Now()
	for seed := range uint64(4) {
		full := verdicts(t, fake.NewUntrimmedCluster(fake.VariedCluster(seed, now)...))
		trimmed := verdicts(t, fake.NewCluster(fake.VariedCluster(seed, now)...))
		if !slices.Equal(full, trimmed) {
			t.Errorf("seed %d: verdicts over untrimmed (-) and trimmed (+) pods differ:\n%s", seed, symdiff(full, trimmed))
		}
		if !slices.ContainsFunc(full, func(v string) bool { return strings.HasSuffix(v, "preEvictionFilter=false") }) ||
			!slices.ContainsFunc(full, func(v string) bool { return strings.HasSuffix(v, "filter=true preEvictionFilter=true") }) {
			t.Errorf("seed %d: want pods that fit elsewhere and pods that do not: %v", seed, full)
		}
	}
}
