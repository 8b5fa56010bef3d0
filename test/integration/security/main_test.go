// Package security tries Accord's endpoints as a cluster's security reviewer would, on a control plane
// that authenticates with TokenReviews and authorises with RBAC: every secure port (accord-descheduler,
// accord-metrics-reporter) with the callers none, a token that fails review, a ServiceAccount
// without rights and one granted them through the RBAC the chart ships; and every pod the chart and
// the kustomize base render, admitted by PodSecurity at enforce: restricted.
package security

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/accord-sched/accord/test/harness"
)

var env *harness.Env

func TestMain(m *testing.M) {
	harness.Main(m, &env, harness.Options{APIServerFlags: []string{"--authorization-mode=RBAC"}, WithoutControllers: true, WithoutNodeSimulator: true})
}

const (
	chartDir = "../../../manifests/charts/accord"
	baseDir  = "../../../manifests"
)

// resources maps the kinds the tests create from rendered manifests to their resources.
var resources = map[string]schema.GroupVersionResource{
	"ServiceAccount":                   {Version: "v1", Resource: "serviceaccounts"},
	"ClusterRole":                      {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	"ClusterRoleBinding":               {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
	"Role":                             {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
	"RoleBinding":                      {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	"ValidatingAdmissionPolicy":        {Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"},
	"ValidatingAdmissionPolicyBinding": {Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"},
}

// apply creates the rendered objects of the kinds in resources (the others are skipped), and deletes
// the cluster-scoped and kube-system ones when the test ends.
func apply(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		gvr, ok := resources[o.GetKind()]
		if !ok {
			continue
		}
		ri := dyn.Resource(gvr).Namespace(o.GetNamespace())
		if _, err := ri.Create(ctx, o, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
		name := o.GetName()
		t.Cleanup(func() {
			if err := ri.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %s: %v", name, err)
			}
		})
	}
}

// serviceAccountToken creates the ServiceAccount ns/name if it does not exist and returns a token
// of it from the TokenRequest API, as a pod's projected token (for the apiserver's audiences, or for
// audiences when given, as kubectl create token --audience).
func serviceAccountToken(t *testing.T, ns, name string, audiences ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := env.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	expiry := int64(3600)
	tr, err := env.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry, Audiences: audiences}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token of %s/%s: %v", ns, name, err)
	}
	return tr.Status.Token
}

// tokenKubeconfig writes a kubeconfig that reaches the control plane with token and returns its path.
func tokenKubeconfig(t *testing.T, token string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["accord"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
	kc.AuthInfos["user"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["accord"] = &clientcmdapi.Context{Cluster: "accord", AuthInfo: "user"}
	kc.CurrentContext = "accord"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// keep returns the objects for which pick(kind, name) holds.
func keep(objs []*unstructured.Unstructured, pick func(kind, name string) bool) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if pick(o.GetKind(), o.GetName()) {
			out = append(out, o)
		}
	}
	return out
}

// writePolicy writes a DeschedulerPolicy whose one profile looks at no node (its node selector
// matches none): cycles and explain runs are quick and evict nothing.
func writePolicy(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	policy := "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nnodeSelector: test.accord.dev/none=none\nprofiles:\n- name: p\n  plugins:\n    deschedule: {enabled: [RemovePodsViolatingNodeTaints]}\n"
	if err := os.WriteFile(path, []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeTaintPolicy writes a DeschedulerPolicy whose one profile looks at the nodes labelled
// test.accord.dev/ns=ns and nominates the pods that do not tolerate their NoSchedule taints (without
// the scheduler simulation): explain has rows for the pods on them.
func writeTaintPolicy(t *testing.T, ns string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	policy := "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nnodeSelector: test.accord.dev/ns=" + ns + "\nprofiles:\n- name: p\n  plugins:\n" +
		"    deschedule: {enabled: [RemovePodsViolatingNodeTaints]}\n    preEvictionFilter: {disabled: [SchedulerSimulation]}\n"
	if err := os.WriteFile(path, []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
