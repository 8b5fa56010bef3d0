package evictions

import (
	"encoding/json"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// FieldManager is the field manager of every write the descheduler makes to a pod (setting and
// removing SoftEvictionAnnotation): the pod's managedFields then name it as the owner of the
// annotation it set.
const FieldManager = "accord-descheduler"

// MarkPrefix is the prefix of the annotations the descheduler writes on pods. Only the
// descheduler's own count: see DropForeignMarks.
const MarkPrefix = "descheduler.accord.dev/"

// DropForeignMarks removes from a pod the annotations under MarkPrefix that its managedFields do not
// attribute to FieldManager (the descheduler did not write them: a tenant did, with kubectl annotate
// or any client), and returns their keys. The descheduler's pod informer runs it on every pod before
// managedFields are stripped (its transform, VerifyMarks), so a mark someone else set is neither counted against
// the caps and budgets as an eviction in progress, nor makes its pod immune to eviction, nor is
// cleared by the descheduler: it is not there as far as the descheduler is concerned.
//
// A field manager is a name any client may give (and managedFields may be rewritten), so this alone
// stops the honest mistake and the casual tenant, not one who writes as "accord-descheduler" on
// purpose: the ValidatingAdmissionPolicy the chart and the kustomize base ship
// (accord-descheduler-marks) lets only the descheduler's ServiceAccount set, change or remove these
// annotations, which closes that too.
//
// The pod must be the informer's freshly decoded object (a transform's), which it changes in place.
func DropForeignMarks(p *corev1.Pod) []string {
	var dropped []string
	for k := range p.Annotations {
		if strings.HasPrefix(k, MarkPrefix) && !ownsAnnotation(p, k) {
			dropped = append(dropped, k)
		}
	}
	for _, k := range dropped {
		delete(p.Annotations, k)
	}
	if len(dropped) > 0 {
		klog.V(2).InfoS("Ignoring annotations the descheduler did not write", "pod", klog.KObj(p), "annotations", dropped, "fieldManager", FieldManager)
	}
	return dropped
}

// verified is the managedFields a pod gets once VerifyMarks has checked it: a slice no decoding can
// produce (its one entry lives here), so that a second pass of the transform over the same cached
// object (client-go may transform an object again, e.g. when it re-queues it from its store) knows
// the pod's marks were already checked, whereas a pod whose managedFields a client stripped on the
// apiserver still has its marks dropped.
var verified = []metav1.ManagedFieldsEntry{{Manager: FieldManager + "/verified"}}

func isVerified(p *corev1.Pod) bool {
	return len(p.ManagedFields) == 1 && &p.ManagedFields[0] == &verified[0]
}

// VerifyMarks wraps the pod informer's transform next (which may strip managedFields): a pod first
// loses the marks the descheduler did not write (DropForeignMarks), then goes through next, and is
// then flagged as verified (its managedFields are a shared sentinel of one entry, whatever next did
// with them). A verified pod transformed again keeps its marks.
func VerifyMarks(next func(any) (any, error)) func(any) (any, error) {
	return func(obj any) (any, error) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return next(obj)
		}
		if !isVerified(p) {
			DropForeignMarks(p)
		}
		out, err := next(obj)
		if err == nil {
			p.ManagedFields = verified
		}
		return out, err
	}
}

// ownsAnnotation reports whether the pod's managedFields attribute the annotation key to
// FieldManager (a write to the pod itself, not to a subresource).
func ownsAnnotation(p *corev1.Pod, key string) bool {
	for _, e := range p.ManagedFields {
		if e.Manager != FieldManager || e.Subresource != "" || e.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Metadata struct {
				Annotations map[string]json.RawMessage `json:"f:annotations"`
			} `json:"f:metadata"`
		}
		if err := json.Unmarshal(e.FieldsV1.Raw, &fields); err != nil {
			continue
		}
		if _, ok := fields.Metadata.Annotations["f:"+key]; ok {
			return true
		}
	}
	return false
}
