package playground

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	schedv1alpha1 "github.com/accord-sched/accord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/accord-sched/accord/apis/slo/v1alpha1"
)

// sampleScheme knows the built-in types and Accord's CRDs; samples are decoded strictly, so a typo in
// a sample file is an error that names the field.
func sampleScheme() (*runtime.Scheme, runtime.Decoder, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, schedv1alpha1.AddToScheme, slov1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, nil, err
		}
	}
	return scheme, serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer(), nil
}

// DecodeSamples reads every YAML document of the named files in fsys and returns the objects, with
// List kinds flattened into their items.
func DecodeSamples(fsys fs.FS, names ...string) ([]runtime.Object, error) {
	_, decoder, err := sampleScheme()
	if err != nil {
		return nil, err
	}
	var objs []runtime.Object
	for _, name := range names {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for i := 0; ; i++ {
			doc, err := reader.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: document %d: %w", name, i, err)
			}
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			obj, _, err := decoder.Decode(doc, nil, nil)
			if err != nil {
				return nil, fmt.Errorf("%s: document %d: %w", name, i, err)
			}
			if meta.IsListType(obj) {
				items, err := meta.ExtractList(obj)
				if err != nil {
					return nil, fmt.Errorf("%s: document %d: %w", name, i, err)
				}
				for _, item := range items {
					if u, ok := item.(*runtime.Unknown); ok {
						decoded, _, err := decoder.Decode(u.Raw, nil, nil)
						if err != nil {
							return nil, fmt.Errorf("%s: document %d: %w", name, i, err)
						}
						item = decoded
					}
					objs = append(objs, item)
				}
				continue
			}
			objs = append(objs, obj)
		}
	}
	return objs, nil
}
