package framework_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/accord-sched/accord/pkg/descheduler/framework"
)

type named string

func (n named) Name() string { return string(n) }

func factory(name string) framework.PluginFactory {
	return func(context.Context, runtime.Object, framework.Handle) (framework.Plugin, error) {
		return named(name), nil
	}
}

func TestRegistry(t *testing.T) {
	r := framework.Registry{}
	if err := r.Register("A", factory("A")); err != nil {
		t.Fatal(err)
	}
	if err := r.Register("A", factory("A")); err == nil || !strings.Contains(err.Error(), `"A" already exists`) {
		t.Errorf("duplicate Register: %v", err)
	}
	if err := r.Register("N", nil); err == nil {
		t.Error("nil factory accepted")
	}
	if err := r.Unregister("missing"); err == nil || !strings.Contains(err.Error(), `no plugin named "missing"`) {
		t.Errorf("Unregister of a missing name: %v", err)
	}
	if err := r.Merge(framework.Registry{"B": factory("B"), "C": factory("C")}); err != nil {
		t.Fatal(err)
	}
	if len(r) != 3 {
		t.Errorf("after Merge: %d plugins", len(r))
	}
	if err := r.Merge(framework.Registry{"B": factory("B")}); err == nil {
		t.Error("Merge over an existing name succeeded")
	}
	if err := r.Unregister("B"); err != nil {
		t.Fatal(err)
	}
	p, err := r["C"](t.Context(), nil, nil)
	if err != nil || p.Name() != "C" {
		t.Errorf("factory C built %v, %v", p, err)
	}
	if _, ok := r["B"]; ok {
		t.Error("B still registered")
	}
}

type argsT struct {
	metav1.TypeMeta
	X int
}

func (a *argsT) DeepCopyObject() runtime.Object { c := *a; return &c }

func TestArgsTypes(t *testing.T) {
	a := framework.ArgsTypes{}
	if err := a.Register("A", &argsT{X: 5}); err != nil {
		t.Fatal(err)
	}
	if err := a.Register("A", &argsT{}); err == nil {
		t.Error("second args type for A accepted")
	}
	if err := a.Register("B", nil); err == nil {
		t.Error("nil args type accepted")
	}
	fresh, ok := a.New("A").(*argsT)
	if !ok || fresh.X != 0 {
		t.Errorf("New returned %#v, want a zero *argsT", a.New("A"))
	}
	if a.Kind("A") != "argsT" || a.Kind("none") != "" || a.New("none") != nil {
		t.Errorf("Kind/New of unknown plugins")
	}
	if err := a.Merge(framework.ArgsTypes{"A": &argsT{}}); err == nil {
		t.Error("Merge over an existing args type succeeded")
	}
}

func TestLimitErrors(t *testing.T) {
	node := &framework.EvictionLimitError{Scope: framework.LimitScopeNode, Key: "n1", Limit: 2, Default: true}
	total := &framework.EvictionLimitError{Scope: framework.LimitScopeTotal, Limit: 9}
	ns := &framework.EvictionLimitError{Scope: framework.LimitScopeNamespace, Key: "a", Limit: 1}
	wrapped := wrap{node}
	if !framework.IsNodeLimit(wrapped) || framework.IsTotalLimit(wrapped) || framework.IsNamespaceLimit(wrapped) {
		t.Error("node limit misclassified")
	}
	if !framework.IsTotalLimit(total) || !framework.IsNamespaceLimit(ns) || framework.IsNodeLimit(framework.ErrDryRun) {
		t.Error("limit errors misclassified")
	}
	if !strings.Contains(node.Error(), `node "n1"`) || !strings.Contains(node.Error(), "default") || !strings.Contains(total.Error(), "9 pods per cycle in total (policy)") {
		t.Errorf("messages: %q %q", node.Error(), total.Error())
	}
	if !framework.NewStatus(nil).IsSuccess() || (*framework.Status)(nil).AsError() != nil || framework.Errorf("x %d", 1).AsError().Error() != "x 1" {
		t.Error("Status helpers")
	}
}

type wrap struct{ err error }

func (w wrap) Error() string { return "wrapped: " + w.err.Error() }
func (w wrap) Unwrap() error { return w.err }
