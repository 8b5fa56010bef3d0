// Package maxlabeled is the example rule of the "A rule both binaries enforce" checklist
// (pkg/descheduler/README.md): a node holds at most MaxPerNode pods labelled LabelKey=true. The
// scheduler side (package scheduler) keeps a pod off a node that is full; the descheduler side
// (package descheduler) evicts the pods above the limit; both take their verdicts from here, so
// they cannot disagree. This package is pure: no clients, no framework.
package maxlabeled

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// Name is the plugin's name in both binaries' configurations.
const Name = "MaxLabeledPerNode"

// Rule is the args both plugins share. The scheduler's pluginConfig sets them; the descheduler's
// follow them (a policy that leaves them out gets the scheduler's, another value is rejected).
type Rule struct {
	// LabelKey marks the pods the rule counts (value "true"). Default example.accord.dev/limited.
	LabelKey string `json:"labelKey,omitempty"`
	// MaxPerNode is how many such pods a node may hold. Default 2.
	MaxPerNode int32 `json:"maxPerNode,omitempty"`
}

// SetDefaults fills the fields left out.
func (r *Rule) SetDefaults() {
	if r.LabelKey == "" {
		r.LabelKey = "example.accord.dev/limited"
	}
	if r.MaxPerNode == 0 {
		r.MaxPerNode = 2
	}
}

// Validate checks defaulted args; errors carry paths below path.
func (r *Rule) Validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if r.MaxPerNode < 1 {
		errs = append(errs, field.Invalid(path.Child("maxPerNode"), r.MaxPerNode, "must be at least 1"))
	}
	return errs
}

// Decode returns the defaulted rule of a scheduler pluginConfig's args: kube-scheduler's scheme does
// not know them, so it hands them over as *runtime.Unknown (JSON or YAML), or nil when the profile
// has no pluginConfig for the plugin (the defaults). Decoding is strict: an unknown field is an
// error. The scheduler plugin decodes its args with it, and the descheduler plugin the scheduler's
// args it follows, so both read them alike.
func Decode(obj runtime.Object) (*Rule, error) {
	r := &Rule{}
	if obj != nil {
		u, ok := obj.(*runtime.Unknown)
		if !ok {
			return nil, fmt.Errorf("want args of type *runtime.Unknown, got %T", obj)
		}
		switch {
		case u == nil:
		case u.ContentType != runtime.ContentTypeJSON && u.ContentType != runtime.ContentTypeYAML && u.ContentType != "":
			return nil, fmt.Errorf("args of content type %q", u.ContentType)
		case len(u.Raw) > 0:
			if err := yaml.UnmarshalStrict(u.Raw, r); err != nil {
				return nil, err
			}
		}
	}
	r.SetDefaults()
	return r, nil
}

// Counts reports whether the rule counts pod.
func (r *Rule) Counts(pod *corev1.Pod) bool { return pod.Labels[r.LabelKey] == "true" }

// Fits reports whether one more counted pod fits a node that holds onNode of them.
func (r *Rule) Fits(onNode int) bool { return onNode < int(r.MaxPerNode) }

// Excess is how many of the onNode counted pods of a node are above the limit.
func (r *Rule) Excess(onNode int) int { return max(0, onNode-int(r.MaxPerNode)) }
