package localcluster

import (
	"context"
	"fmt"
	"io/fs"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/accord-sched/accord/manifests"
)

// InstallCRDs creates (or updates) every CRD in manifests/crds and waits until each is Established
// and its resource is served.
func InstallCRDs(ctx context.Context, cfg *rest.Config) error {
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	files, err := fs.Glob(manifests.CRDs, "crds/*.yaml")
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no CRDs embedded in manifests/crds")
	}
	for _, f := range files {
		data, err := manifests.CRDs.ReadFile(f)
		if err != nil {
			return err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if err := applyCRD(ctx, client, crd); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
	}
	return nil
}

func applyCRD(ctx context.Context, client apiextensionsclient.Interface, crd *apiextensionsv1.CustomResourceDefinition) error {
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	_, err := crds.Create(ctx, crd, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		existing, getErr := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if getErr != nil {
			return getErr
		}
		crd.ResourceVersion = existing.ResourceVersion
		_, err = crds.Update(ctx, crd, metav1.UpdateOptions{})
	}
	if err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}
