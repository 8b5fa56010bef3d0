package descheduler

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/accord-sched/accord/pkg/descheduler/explain"
	"github.com/accord-sched/accord/pkg/descheduler/runner"
	"github.com/accord-sched/accord/test/harness"
)

// TestWorkloadBudgetReadsScale: a workload of a kind the descheduler has no informer for (a CRD
// with a scale subresource, as an Argo Rollout or an OpenKruise CloneSet) is budgeted on the
// replicas its scale says. Two such owners each have 4 Ready pods on a node that stops fitting: one
// wants 4 replicas (all there: the default budget of 2 lets pods go), the other wants 20 (16 missing
// count as unavailable: its budget holds every pod). Counted from its live pods, the second would be
// a 4-replica workload like the first.
func TestWorkloadBudgetReadsScale(t *testing.T) {
	ctx := context.Background()
	c := newDisruptionCluster(t, "bad", "good")
	gvr := schema.GroupVersionResource{Group: "test.accord.dev", Version: "v1", Resource: "scalables"}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: gvr.Resource + "." + gvr.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gvr.Group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: gvr.Resource, Singular: "scalable", Kind: "Scalable", ListKind: "ScalableList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: gvr.Version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
					XPreserveUnknownFields: ptr.To(true)}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{Scale: &apiextensionsv1.CustomResourceSubresourceScale{
					SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"}}}},
		},
	}
	ext, err := apiextensionsclient.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = ext.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), crd.Name, metav1.DeleteOptions{})
	})
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	var owners []*unstructured.Unstructured
	if err := harness.WaitFor(ctx, 30*time.Second, func(context.Context) (bool, error) {
		owners = owners[:0]
		for _, o := range []struct {
			name     string
			replicas int64
		}{{"small", 4}, {"big", 20}} {
			u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": gvr.Group + "/" + gvr.Version, "kind": "Scalable",
				"metadata": map[string]any{"name": o.name}, "spec": map[string]any{"replicas": o.replicas}}}
			created, err := dyn.Resource(gvr).Namespace(c.ns).Create(ctx, u, metav1.CreateOptions{})
			if err != nil {
				t.Logf("creating Scalable %s (the CRD may not be served yet): %v", o.name, err)
				return false, nil
			}
			owners = append(owners, created)
		}
		return true, nil
	}); err != nil {
		t.Fatalf("the Scalable CRD is not served: %v", err)
	}
	for _, o := range owners {
		for i := range 4 {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", o.GetName(), i), Namespace: c.ns, Labels: map[string]string{"app": o.GetName()},
					OwnerReferences: []metav1.OwnerReference{{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Name: o.GetName(), UID: o.GetUID(), Controller: ptr.To(true)}}},
				Spec: corev1.PodSpec{NodeName: c.nodes[0], TerminationGracePeriodSeconds: ptr.To[int64](0), Containers: []corev1.Container{{Name: "c", Image: "pause",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m")}}}}},
			}
			if _, err := env.Client.CoreV1().Pods(c.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := harness.WaitFor(ctx, 60*time.Second, func(context.Context) (bool, error) {
		small, _ := c.readyPods(t, "small")
		big, _ := c.readyPods(t, "big")
		return small[c.nodes[0]] == 4 && big[c.nodes[0]] == 4, nil
	}); err != nil {
		t.Fatalf("the Scalables' pods are not all Ready: %v", err)
	}
	c.disableCPU(t, c.nodes[0])
	var rows []explain.Row
	verdicts := map[string]map[string]int{}
	if err := harness.WaitFor(ctx, 30*time.Second, func(context.Context) (bool, error) {
		var err error
		rows, err = explain.Run(ctx, runner.Config{RestConfig: env.Config, PolicyConfigFile: disruptionPolicy(t, c.ns, "", "")})
		if err != nil {
			return false, err
		}
		clear(verdicts)
		for _, r := range rows {
			app, _, _ := strings.Cut(r.Pod, "-")
			if verdicts[app] == nil {
				verdicts[app] = map[string]int{}
			}
			verdicts[app][r.Verdict+"/"+r.BlockedBy]++
		}
		return verdicts["small"][explain.VerdictEvict+"/"]+verdicts["big"][explain.VerdictBlocked+"/"+explain.BlockedByWorkloadBudget] > 0, nil
	}); err != nil {
		t.Fatalf("explain names none of the Scalables' pods: %v (%+v)", err, rows)
	}
	if n := verdicts["small"][explain.VerdictEvict+"/"]; n != 2 {
		t.Errorf("Scalable small (4 of 4 replicas): %d pods would be evicted, want 2 (its default budget); verdicts %v", n, verdicts["small"])
	}
	if n := verdicts["big"][explain.VerdictBlocked+"/"+explain.BlockedByWorkloadBudget]; n != 4 {
		t.Errorf("Scalable big (4 of 20 replicas): %d pods held by the workload budget, want 4; verdicts %v", n, verdicts["big"])
	}
	for _, r := range rows {
		if strings.HasPrefix(r.Pod, "big-") && r.BlockedBy == explain.BlockedByWorkloadBudget && !strings.Contains(r.Message, "20") {
			t.Errorf("the budget message of %s does not name the 20 replicas of the scale: %q", r.Pod, r.Message)
		}
	}
	t.Logf("FIGURE workload_budget_scale: Scalable small (scale 4, 4 pods): %v; Scalable big (scale 20, 4 pods): %v", verdicts["small"], verdicts["big"])
}
