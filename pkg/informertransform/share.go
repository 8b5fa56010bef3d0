package informertransform

import (
	"crypto/sha256"
	"encoding/json"
	"slices"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/accord-sched/accord/pkg/constraints"
)

// maxShared bounds each of a PodSharer's tables. A full table is forgotten and starts again: the
// copies it handed out stay with their pods, only later pods stop sharing with them.
const maxShared = 1 << 14

// maxSharedKey is the longest key a table keeps: a map or list bigger than that (a large annotation)
// is left as the pod's own.
const maxSharedKey = 4 << 10

// maxSharedJSON is the longest JSON encoding of a list NewTrimmingPodSharer's tables key by its hash.
const maxSharedJSON = 64 << 10

// PodSharer is an informer transform (Transform) that, beyond StripManagedFields, makes the pods of
// one template share what they have in common instead of holding one decoded copy each.
//
// Every pod the apiserver sends is decoded into its own objects: the ten thousand replicas of a
// Deployment hold ten thousand equal requests maps, label maps, toleration lists and owner
// references, and a hundred thousand copies of strings such as the namespace, the image or
// "Running". At 100000 pods that is a quarter of the descheduler's heap. PodSharer points equal
// parts at one copy: maps and lists through bounded tables keyed by their content, pointers to
// scalars (priority, grace periods, booleans) through one pointer per value, strings through Go's
// unique package (which forgets a string once no pod holds it).
//
// Sharing is safe because informer objects are read-only (client-go's contract, which the plugins,
// the evictor and the simulated scheduler keep: whatever changes a pod deep-copies it first), and
// every shared list is clipped, so an append makes a new array instead of writing into the shared
// one. The pod is semantically unchanged (TestPodSharerKeepsEverything).
type PodSharer struct {
	mu          sync.Mutex
	key         []byte
	names       []string
	maps        table[map[string]string]
	lists       table[corev1.ResourceList]
	tolerations table[[]corev1.Toleration]
	owners      table[[]metav1.OwnerReference]
	hostIPs     table[[]corev1.HostIP]
	// One pointer per value of the spec's optional scalars (priority, grace periods, booleans),
	// which the apiserver's defaults set on every pod.
	bools       values[bool]
	int32s      values[int32]
	int64s      values[int64]
	preemptions values[corev1.PreemptionPolicy]

	// trim: TrimPod first, then share whole container lists, affinities, spread constraints and
	// container status lists too.
	trim       bool
	containers table[[]corev1.Container]
	affinities table[[]*corev1.Affinity]
	spreads    table[[]corev1.TopologySpreadConstraint]
	statuses   table[[]corev1.ContainerStatus]
}

// NewPodSharer returns an empty PodSharer; give each informer factory its own.
func NewPodSharer() *PodSharer { return &PodSharer{} }

// NewTrimmingPodSharer returns an empty PodSharer that also trims (the descheduler's): a pod first
// loses the fields of Trimmed (TrimPod), then shares, beyond what NewPodSharer's pods share, its
// container and init container lists, its affinity, its topology spread constraints and its
// container and init container status lists with the pods whose trimmed ones are equal, which the
// replicas of one template are (their environment, probes and volume mounts, which trimming drops,
// are the parts that sometimes differ; their statuses differ by the runtime's container IDs and
// start times, which it drops too, until a container restarts).
func NewTrimmingPodSharer() *PodSharer { return &PodSharer{trim: true} }

// Transform is the cache.TransformFunc: a pod is stripped of its managedFields (and trimmed, if the
// sharer trims) and shares its common parts; any other object is only stripped
// (StripManagedFields).
func (s *PodSharer) Transform(obj any) (any, error) {
	obj, err := StripManagedFields(obj)
	if pod, ok := obj.(*corev1.Pod); ok && err == nil {
		if s.trim {
			TrimPod(pod)
		}
		s.share(pod)
	}
	return obj, err
}

func (s *PodSharer) share(pod *corev1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()

	m := &pod.ObjectMeta
	m.Namespace = constraints.Intern(m.Namespace)
	m.GenerateName = constraints.Intern(m.GenerateName)
	m.Labels = s.stringMap(m.Labels)
	m.Annotations = s.stringMap(m.Annotations)
	m.OwnerReferences = s.ownerReferences(m.OwnerReferences)

	spec := &pod.Spec
	spec.NodeName = constraints.Intern(spec.NodeName)
	spec.SchedulerName = constraints.Intern(spec.SchedulerName)
	spec.ServiceAccountName = constraints.Intern(spec.ServiceAccountName)
	spec.DeprecatedServiceAccount = constraints.Intern(spec.DeprecatedServiceAccount)
	spec.PriorityClassName = constraints.Intern(spec.PriorityClassName)
	spec.RestartPolicy = corev1.RestartPolicy(constraints.Intern(string(spec.RestartPolicy)))
	spec.DNSPolicy = corev1.DNSPolicy(constraints.Intern(string(spec.DNSPolicy)))
	spec.NodeSelector = s.stringMap(spec.NodeSelector)
	spec.TerminationGracePeriodSeconds = s.int64s.share(spec.TerminationGracePeriodSeconds)
	spec.ActiveDeadlineSeconds = s.int64s.share(spec.ActiveDeadlineSeconds)
	spec.AutomountServiceAccountToken = s.bools.share(spec.AutomountServiceAccountToken)
	spec.ShareProcessNamespace = s.bools.share(spec.ShareProcessNamespace)
	spec.EnableServiceLinks = s.bools.share(spec.EnableServiceLinks)
	spec.SetHostnameAsFQDN = s.bools.share(spec.SetHostnameAsFQDN)
	spec.HostUsers = s.bools.share(spec.HostUsers)
	spec.Priority = s.int32s.share(spec.Priority)
	spec.PreemptionPolicy = s.preemptions.share(spec.PreemptionPolicy)
	spec.Tolerations = s.tolerationList(spec.Tolerations)
	spec.Overhead = s.resourceList(spec.Overhead)
	for _, containers := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range containers {
			c := &containers[i]
			c.Name = constraints.Intern(c.Name)
			c.Image = constraints.Intern(c.Image)
			c.ImagePullPolicy = corev1.PullPolicy(constraints.Intern(string(c.ImagePullPolicy)))
			c.TerminationMessagePath = constraints.Intern(c.TerminationMessagePath)
			c.TerminationMessagePolicy = corev1.TerminationMessagePolicy(constraints.Intern(string(c.TerminationMessagePolicy)))
			c.Resources.Requests = s.resourceList(c.Resources.Requests)
			c.Resources.Limits = s.resourceList(c.Resources.Limits)
		}
	}

	if s.trim {
		// After the loop above: the pod's own containers were interned, the shared copy is not
		// written to.
		spec.InitContainers = sharedJSON(s, &s.containers, spec.InitContainers)
		spec.Containers = sharedJSON(s, &s.containers, spec.Containers)
		spec.TopologySpreadConstraints = sharedJSON(s, &s.spreads, spec.TopologySpreadConstraints)
		if spec.Affinity != nil {
			spec.Affinity = sharedJSON(s, &s.affinities, []*corev1.Affinity{spec.Affinity})[0]
		}
	}

	st := &pod.Status
	st.Phase = corev1.PodPhase(constraints.Intern(string(st.Phase)))
	st.QOSClass = corev1.PodQOSClass(constraints.Intern(string(st.QOSClass)))
	st.HostIP = constraints.Intern(st.HostIP)
	for i := range st.HostIPs {
		st.HostIPs[i].IP = constraints.Intern(st.HostIPs[i].IP)
	}
	st.HostIPs = sharedList(s, &s.hostIPs, st.HostIPs, func(h *corev1.HostIP) { s.put(h.IP) })
	for i := range st.Conditions {
		c := &st.Conditions[i]
		c.Type = corev1.PodConditionType(constraints.Intern(string(c.Type)))
		c.Status = corev1.ConditionStatus(constraints.Intern(string(c.Status)))
		c.Reason = constraints.Intern(c.Reason)
	}
	for _, statuses := range [][]corev1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for i := range statuses {
			c := &statuses[i]
			c.Name = constraints.Intern(c.Name)
			c.Image = constraints.Intern(c.Image)
			c.ImageID = constraints.Intern(c.ImageID)
		}
	}
	if s.trim {
		// Trimmed of their runtime handles and start times, the container statuses of a template's
		// running replicas are equal (until one restarts).
		st.InitContainerStatuses = sharedJSON(s, &s.statuses, st.InitContainerStatuses)
		st.ContainerStatuses = sharedJSON(s, &s.statuses, st.ContainerStatuses)
	}
}

// table maps a content key to the one copy of that content handed out so far.
type table[V any] struct{ m map[string]V }

func (t *table[V]) share(key []byte, v V) V {
	if len(key) > maxSharedKey {
		return v
	}
	if c, ok := t.m[string(key)]; ok {
		return c
	}
	if t.m == nil {
		t.m = map[string]V{}
	} else if len(t.m) >= maxShared {
		clear(t.m)
	}
	t.m[string(key)] = v
	return v
}

// values maps a scalar value to the one pointer to it handed out so far.
type values[T comparable] struct{ m map[T]*T }

func (v *values[T]) share(p *T) *T {
	if p == nil {
		return nil
	}
	if c, ok := v.m[*p]; ok {
		return c
	}
	if v.m == nil {
		v.m = map[T]*T{}
	} else if len(v.m) >= maxShared {
		clear(v.m)
	}
	v.m[*p] = p
	return p
}

// put appends a length-prefixed field to the key, so that no two contents have the same key.
func (s *PodSharer) put(field string) {
	s.key = strconv.AppendInt(s.key, int64(len(field)), 10)
	s.key = append(s.key, ':')
	s.key = append(s.key, field...)
}

// sortedKeys fills s.names with m's keys in order.
func sortedKeys[K ~string, V any](s *PodSharer, m map[K]V) []string {
	s.names = s.names[:0]
	for k := range m {
		s.names = append(s.names, string(k))
	}
	slices.Sort(s.names)
	return s.names
}

func (s *PodSharer) stringMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	size := 0
	for k, v := range m {
		if size += len(k) + len(v); size > maxSharedKey {
			return m // too big to key (a large annotation): left as the pod's own
		}
	}
	s.key = s.key[:0]
	for _, k := range sortedKeys(s, m) {
		s.put(k)
		s.put(m[k])
	}
	return s.maps.share(s.key, m)
}

func (s *PodSharer) resourceList(l corev1.ResourceList) corev1.ResourceList {
	if len(l) == 0 {
		return l
	}
	s.key = s.key[:0]
	for _, name := range sortedKeys(s, l) {
		q := l[corev1.ResourceName(name)]
		s.put(name)
		s.put(q.String())
	}
	return s.lists.share(s.key, l)
}

func (s *PodSharer) tolerationList(ts []corev1.Toleration) []corev1.Toleration {
	return sharedList(s, &s.tolerations, ts, func(t *corev1.Toleration) {
		s.put(t.Key)
		s.put(string(t.Operator))
		s.put(t.Value)
		s.put(string(t.Effect))
		s.putInt64(t.TolerationSeconds)
	})
}

func (s *PodSharer) ownerReferences(refs []metav1.OwnerReference) []metav1.OwnerReference {
	return sharedList(s, &s.owners, refs, func(r *metav1.OwnerReference) {
		s.put(r.APIVersion)
		s.put(r.Kind)
		s.put(r.Name)
		s.put(string(r.UID))
		s.putBool(r.Controller)
		s.putBool(r.BlockOwnerDeletion)
	})
}

// sharedList returns t's copy of list, keyed by what put adds to the key for each element, clipped
// so that an append never writes into it.
func sharedList[T any](s *PodSharer, t *table[[]T], list []T, put func(*T)) []T {
	if len(list) == 0 {
		return list
	}
	s.key = s.key[:0]
	for i := range list {
		put(&list[i])
	}
	return t.share(s.key, slices.Clip(list))
}

// sharedJSON returns t's copy of list, keyed by the SHA-256 of its JSON encoding (which has every
// field of these API types), clipped so that an append never writes into it. A list whose encoding
// fails or is too long is left as the pod's own.
func sharedJSON[T any](s *PodSharer, t *table[[]T], list []T) []T {
	if len(list) == 0 {
		return list
	}
	raw, err := json.Marshal(list)
	if err != nil || len(raw) > maxSharedJSON {
		return list
	}
	sum := sha256.Sum256(raw)
	s.key = append(s.key[:0], sum[:]...)
	return t.share(s.key, slices.Clip(list))
}

func (s *PodSharer) putInt64(v *int64) {
	if v == nil {
		s.key = append(s.key, 'n')
		return
	}
	s.key = strconv.AppendInt(append(s.key, 'v'), *v, 10)
	s.key = append(s.key, ';')
}

func (s *PodSharer) putBool(v *bool) {
	switch {
	case v == nil:
		s.key = append(s.key, 'n')
	case *v:
		s.key = append(s.key, 't')
	default:
		s.key = append(s.key, 'f')
	}
}
