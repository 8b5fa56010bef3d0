package console_test

import (
	"os"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/accord-sched/accord/manifests/render"
	"github.com/accord-sched/accord/pkg/console"
)

func decode(t *testing.T, file string) []runtime.Object {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := render.Objects(data)
	if err != nil {
		t.Fatal(err)
	}
	decoder := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	var out []runtime.Object
	for _, d := range docs {
		raw, err := d.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		obj, _, err := decoder.Decode(raw, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		out = append(out, obj)
	}
	return out
}

// The Deployment's args are accord-console's flags, without --playground, with token
// authentication for the console's audience; the probes are the console's /healthz and /readyz on
// its port over HTTPS; the Service targets that port.
func TestDeploymentAndService(t *testing.T) {
	d, ok := decode(t, "deployment.yaml")[0].(*appsv1.Deployment)
	if !ok {
		t.Fatal("deployment.yaml holds no Deployment")
	}
	c := d.Spec.Template.Spec.Containers[0]
	cmd := console.NewCommand()
	if err := cmd.ParseFlags(c.Args); err != nil {
		t.Fatalf("args %v: %v", c.Args, err)
	}
	if slices.Contains(c.Args, "--playground") || slices.Contains(c.Args, "--playground=true") {
		t.Error("the in-cluster console must not serve the playground's write controls")
	}
	for _, want := range []string{"--authentication=token", "--token-audience=" + console.DefaultTokenAudience} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("args %v: missing %s", c.Args, want)
		}
	}
	if c.Ports[0].Name != "https" || c.Ports[0].ContainerPort != 8080 || !slices.Contains(c.Args, "--bind-address=0.0.0.0:8080") {
		t.Errorf("port %+v and --bind-address disagree", c.Ports[0])
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Error("probes must be /healthz and /readyz")
	} else if c.LivenessProbe.HTTPGet.Scheme != corev1.URISchemeHTTPS || c.ReadinessProbe.HTTPGet.Scheme != corev1.URISchemeHTTPS || c.ReadinessProbe.HTTPGet.Port.String() != "https" {
		t.Errorf("probes %+v, %+v: the console serves HTTPS only", c.LivenessProbe.HTTPGet, c.ReadinessProbe.HTTPGet)
	}
	if d.Spec.Template.Spec.ServiceAccountName != "accord-console" {
		t.Errorf("service account %q", d.Spec.Template.Spec.ServiceAccountName)
	}
	svc, ok := decode(t, "service.yaml")[0].(*corev1.Service)
	if !ok || svc.Spec.Ports[0].TargetPort.String() != "https" || svc.Spec.Ports[0].Port != 443 || svc.Spec.Selector["app.kubernetes.io/name"] != "accord-console" {
		t.Errorf("service.yaml: %+v", svc)
	}
}
