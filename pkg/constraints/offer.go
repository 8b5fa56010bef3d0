package constraints

import (
	"slices"
	"strings"
	"unique"

	corev1 "k8s.io/api/core/v1"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
)

// Offer is a ClusterScopedResource compiled for repeated checks: the names it enables and its
// clamped scores, each sorted by name. A scheduler checks one CR against every pod it places, so it
// builds the Offer once per CR version (NewOffer allocates) and then answers MissingResource and
// NodeScore by scanning two short lists, without map lookups or allocations. The answers are
// exactly those of the functions of the same names on the ClusterScopedResource.
//
// An Offer is read at every node a scheduler visits, where its memory is seldom in the CPU's cache:
// the first names and scores are kept inline, where enabled and scores then point (an Offer is
// copied only with CopyTo, which points the copy's lists at its own inline storage), so that a
// check reads the Offer's own memory and nothing further. Each list is
// followed by its inline storage, so a check reads adjacent bytes.
type Offer struct {
	enabled       []corev1.ResourceName
	enabledInline [inlineNames]corev1.ResourceName
	scores        []namedScore
	scoresInline  [inlineNames]namedScore
	// handles keep the canonical copies of the Offer's names (Intern) alive while the Offer lives:
	// the unique package drops a canonical copy once no Handle to it is left, and a name interned
	// after that would get a new copy, equal in bytes but no longer in pointer.
	handles []unique.Handle[string]
}

// inlineNames is how many enabled names and scores an Offer keeps inline: the CRs of the seeds and
// of the scale benchmark name two to four resources.
const inlineNames = 4

type namedScore struct {
	name  corev1.ResourceName
	score int64
}

// NewOffer compiles a ClusterScopedResource; nil gives nil, which offers nothing.
func NewOffer(csr *schedv1alpha1.ClusterScopedResource) *Offer {
	if csr == nil {
		return nil
	}
	o := &Offer{}
	o.enabled, o.scores = o.enabledInline[:0], o.scoresInline[:0]
	for name, on := range csr.Spec.ResourcesFilter {
		if on {
			o.enabled = append(o.enabled, o.intern(name))
		}
	}
	slices.Sort(o.enabled)
	for name := range csr.Spec.ResourcesScore {
		if s := ResourceScore(csr, name); s > 0 {
			o.scores = append(o.scores, namedScore{name: o.intern(name), score: s})
		}
	}
	slices.SortFunc(o.scores, func(a, b namedScore) int { return strings.Compare(string(a.name), string(b.name)) })
	return o
}

// intern interns name and keeps its handle in the Offer.
func (o *Offer) intern(name corev1.ResourceName) corev1.ResourceName {
	h := unique.Make(string(name))
	o.handles = append(o.handles, h)
	return corev1.ResourceName(h.Value())
}

// CopyTo makes dst an Offer equal to o that reads its own memory: the lists o keeps inline are
// copied into dst's inline storage (a plain struct copy would leave dst's lists pointing into o),
// longer ones are shared, as o never changes them. A NodeIndex keeps each node's Offer inside the
// node's data with it, so that a Filter or Score reads one object where it read two.
func (o *Offer) CopyTo(dst *Offer) {
	*dst = *o
	if len(o.enabled) <= inlineNames {
		dst.enabled = append(dst.enabledInline[:0:inlineNames], o.enabled...)
	}
	if len(o.scores) <= inlineNames {
		dst.scores = append(dst.scoresInline[:0:inlineNames], o.scores...)
	}
}

// Intern returns the canonical copy of name: every interned copy of a name shares one backing array,
// so comparing two of them costs a pointer comparison instead of reading both names' bytes (which, at
// 5000 nodes, are seldom in the CPU's cache). NewOffer interns the names it keeps and holds their
// handles, so the canonical copy of every name some Offer holds stays the same for as long as that
// Offer lives; a caller that checks the same requested names against many Offers interns them once
// (InternAll) and the checks find equal names without reading them. A name no live Offer holds may
// get a new canonical copy after a garbage collection: it matches no Offer anyway.
//
// It is Accord's one intern function: the informers' PodSharer interns pod strings with it too.
func Intern[S ~string](name S) S {
	if name == "" {
		return name
	}
	return S(unique.Make(string(name)).Value())
}

// InternAll interns every name in place and returns names.
func InternAll(names []corev1.ResourceName) []corev1.ResourceName {
	for i, n := range names {
		names[i] = Intern(n)
	}
	return names
}

// MissingResource is MissingResource(csr, requested) for the compiled CR.
func (o *Offer) MissingResource(requested []corev1.ResourceName) (corev1.ResourceName, bool) {
	for _, name := range requested {
		if !o.enables(name) {
			return name, true
		}
	}
	return "", false
}

// enables scans the (short) enabled list: comparing strings of different lengths costs next to
// nothing, which beats hashing the name for a map lookup, and comparing two interned copies of the
// same name (Intern) compares their pointers, not their bytes.
func (o *Offer) enables(name corev1.ResourceName) bool {
	if o == nil {
		return false
	}
	for _, e := range o.enabled {
		if e == name {
			return true
		}
	}
	return false
}

// NodeScore is NodeScore(csr, requested) for the compiled CR.
func (o *Offer) NodeScore(requested []corev1.ResourceName) int64 {
	n := int64(len(requested))
	if n == 0 || o == nil {
		return 0
	}
	var sum int64
	for _, name := range requested {
		for _, s := range o.scores {
			if s.name == name {
				sum += s.score
				break
			}
		}
	}
	return clamp((sum+n-1)/n, 0, schedv1alpha1.MaxResourceScore)
}
