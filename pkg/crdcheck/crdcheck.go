// Package crdcheck is how accord-scheduler and accord-descheduler find out, at start, whether the
// cluster serves Accord's CustomResourceDefinitions, and how they wait for informer caches without
// ever waiting silently.
//
// A plugin that cannot work without a CRD fails at start with a MissingError naming the CRD and
// the plugin; a plugin whose rule is vacuous without the CRD (no such object can exist) skips it and
// watches nothing. WaitForSync bounds every cache-sync wait with a deadline and logs, while it waits,
// which informers have not synced.
package crdcheck

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
)

// CRD identifies one of Accord's CustomResourceDefinitions.
type CRD struct {
	schema.GroupVersionResource
	Kind string
}

// Name is the CRD's object name, <plural>.<group> (what `kubectl get crd` lists).
func (c CRD) Name() string { return c.Resource + "." + c.Group }

// String names the CRD and its kind, e.g. "clusterscopedresources.scheduling.accord.dev
// (scheduling.accord.dev/v1alpha1 ClusterScopedResource)".
func (c CRD) String() string {
	return fmt.Sprintf("%s (%s %s)", c.Name(), c.GroupVersion(), c.Kind)
}

// ClusterScopedResources is the CRD of ClusterScopedResources (manifests/crds).
func ClusterScopedResources() CRD {
	return CRD{GroupVersionResource: schedv1alpha1.SchemeGroupVersion.WithResource("clusterscopedresources"), Kind: "ClusterScopedResource"}
}

// NodeMetrics is the CRD of NodeMetrics (manifests/crds).
func NodeMetrics() CRD {
	return CRD{GroupVersionResource: slov1alpha1.SchemeGroupVersion.WithResource("nodemetrics"), Kind: "NodeMetric"}
}

// Reservations is the CRD of Reservations (manifests/crds); the Reservation scheduler plugin needs it.
func Reservations() CRD {
	return CRD{GroupVersionResource: schedv1alpha1.SchemeGroupVersion.WithResource("reservations"), Kind: "Reservation"}
}

// PodMigrations is the CRD of PodMigrations (manifests/crds); the descheduler's PodMigration
// controller needs it.
func PodMigrations() CRD {
	return CRD{GroupVersionResource: schedv1alpha1.SchemeGroupVersion.WithResource("podmigrations"), Kind: "PodMigration"}
}

// All lists Accord's CRDs.
func All() []CRD {
	return []CRD{ClusterScopedResources(), NodeMetrics(), Reservations(), PodMigrations()}
}

// Availability tells which of Accord's CRDs the cluster serves.
type Availability interface {
	Serves(crd CRD) bool
}

// Served is the set of CRDs a cluster was found to serve. It implements Availability.
type Served map[CRD]bool

// Serves reports whether crd is in the set.
func (s Served) Serves(crd CRD) bool { return s[crd] }

// AllServed is the Availability of a cluster taken to serve every CRD (callers that cannot ask, such
// as unit tests with fake clients).
type AllServed struct{}

// Serves returns true.
func (AllServed) Serves(CRD) bool { return true }

// Discover asks the API server, through discovery, which of crds (all of Accord's when none are
// given) it serves. A group version the server does not know means its CRDs are not served; any
// other discovery error is returned, naming the group version.
func Discover(d discovery.DiscoveryInterface, crds ...CRD) (Served, error) {
	if len(crds) == 0 {
		crds = All()
	}
	served := Served{}
	lists := map[schema.GroupVersion][]string{}
	for _, c := range crds {
		gv := c.GroupVersion()
		names, ok := lists[gv]
		if !ok {
			list, err := d.ServerResourcesForGroupVersion(gv.String())
			switch {
			case apierrors.IsNotFound(err):
				names = []string{}
			case err != nil:
				return nil, fmt.Errorf("API discovery of %s: %w", gv, err)
			default:
				for _, r := range list.APIResources {
					names = append(names, r.Name)
				}
			}
			lists[gv] = names
		}
		served[c] = slices.Contains(names, c.Resource)
	}
	return served, nil
}

// MissingError says that a plugin needs a CRD the cluster does not serve.
type MissingError struct {
	CRD CRD
	// Needer names what needs it, e.g. `plugin "LowNodeLoad" (profile "p")`.
	Needer string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("%s needs the CustomResourceDefinition %s, which the cluster does not serve: install it (kubectl apply -f manifests/crds/) or disable the plugin",
		e.Needer, e.CRD)
}

// Require returns a *MissingError when a does not serve crd (a nil a serves everything).
func Require(a Availability, crd CRD, needer string) error {
	if a == nil || a.Serves(crd) {
		return nil
	}
	return &MissingError{CRD: crd, Needer: needer}
}

// IsMissing reports whether err is, or wraps, a MissingError.
func IsMissing(err error) bool {
	var m *MissingError
	return errors.As(err, &m)
}

// Defaults of WaitForSync.
const (
	// DefaultSyncTimeout bounds a wait for informer caches.
	DefaultSyncTimeout = 2 * time.Minute
	// DefaultLogInterval is how often a wait logs what it still waits for.
	DefaultLogInterval = 10 * time.Second
)

// Informer is one cache to wait for: its name in logs and errors, and whether it has synced.
type Informer struct {
	Name      string
	HasSynced cache.InformerSynced
}

// Factory is an informer factory (client-go's or Accord's generated one).
type Factory interface {
	WaitForCacheSyncWithContext(ctx context.Context) cache.SyncResult
}

// SyncOptions tune WaitForSync.
type SyncOptions struct {
	// Timeout bounds the wait; DefaultSyncTimeout when zero.
	Timeout time.Duration
	// LogInterval is how often the wait logs the informers not synced yet; DefaultLogInterval when
	// zero.
	LogInterval time.Duration
	// OnWaiting, when set, is called with the reason the caches are not ready (which informers
	// have not synced) each time the wait logs it, and once right away.
	OnWaiting func(reason string)
	// What names what is waiting, in logs ("the descheduler").
	What string
}

// WaitForSync waits until every started informer of factories and every informer in extra has
// synced. While it waits it logs, every LogInterval, which have not; after Timeout it returns an
// error naming them. It returns ctx's error when ctx ends first.
func WaitForSync(ctx context.Context, opts SyncOptions, factories []Factory, extra ...Informer) error {
	logger := klog.FromContext(ctx)
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultSyncTimeout
	}
	if opts.LogInterval <= 0 {
		opts.LogInterval = DefaultLogInterval
	}
	if opts.What == "" {
		opts.What = "informer caches"
	}
	deadline, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	start := time.Now()
	for first := true; ; first = false {
		wait := opts.LogInterval
		if first {
			// A quick first look: most caches sync in well under a second, and what has not by
			// then is worth saying at once.
			wait = min(time.Second, opts.LogInterval)
		}
		round, cancelRound := context.WithTimeout(deadline, wait)
		unsynced := pending(round, factories, extra)
		cancelRound()
		if len(unsynced) == 0 {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		reason := fmt.Sprintf("waiting for the %s informer caches to sync: %s", opts.What, strings.Join(unsynced, ", "))
		if deadline.Err() != nil {
			return fmt.Errorf("the %s informer caches did not sync within %s: %s not synced (is the resource served, and may this component list and watch it?)",
				opts.What, opts.Timeout, strings.Join(unsynced, ", "))
		}
		logger.Info("Waiting for informer caches to sync", "component", opts.What, "unsynced", unsynced, "waited", time.Since(start).Round(time.Second), "timeout", opts.Timeout)
		if opts.OnWaiting != nil {
			opts.OnWaiting(reason)
		}
	}
}

// pending waits until ctx ends or everything has synced, and returns the sorted names of what has
// not.
func pending(ctx context.Context, factories []Factory, extra []Informer) []string {
	var out []string
	for _, f := range factories {
		res := f.WaitForCacheSyncWithContext(ctx)
		for typ, ok := range res.Synced {
			if !ok {
				out = append(out, TypeName(typ))
			}
		}
	}
	checks := make([]cache.InformerSynced, 0, len(extra))
	for _, i := range extra {
		checks = append(checks, i.HasSynced)
	}
	if len(checks) > 0 {
		cache.WaitForCacheSync(ctx.Done(), checks...)
	}
	for _, i := range extra {
		if !i.HasSynced() {
			out = append(out, i.Name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TypeName names an informer by the type it lists: "<group-path>/<version>.<Kind>", e.g.
// "core/v1.Pod" or "scheduling/v1alpha1.ClusterScopedResource".
func TypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	parts := strings.Split(t.PkgPath(), "/")
	if n := len(parts); n >= 2 {
		return parts[n-2] + "/" + parts[n-1] + "." + t.Name()
	}
	return t.String()
}
