package constraints

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestNodeReady(t *testing.T) {
	cond := func(typ corev1.NodeConditionType, s corev1.ConditionStatus) corev1.NodeCondition {
		return corev1.NodeCondition{Type: typ, Status: s}
	}
	cases := []struct {
		name  string
		conds []corev1.NodeCondition
		want  bool
	}{
		{"no conditions", nil, false},
		{"Ready True", []corev1.NodeCondition{cond(corev1.NodeMemoryPressure, corev1.ConditionFalse), cond(corev1.NodeReady, corev1.ConditionTrue)}, true},
		{"Ready False", []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionFalse)}, false},
		{"Ready Unknown", []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionUnknown)}, false},
		{"only other conditions", []corev1.NodeCondition{cond(corev1.NodeDiskPressure, corev1.ConditionTrue)}, false},
	}
	for _, tc := range cases {
		if got := NodeReady(&corev1.Node{Status: corev1.NodeStatus{Conditions: tc.conds}}); got != tc.want {
			t.Errorf("%s: NodeReady = %v, want %v", tc.name, got, tc.want)
		}
	}
}
