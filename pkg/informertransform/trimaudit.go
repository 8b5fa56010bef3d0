package informertransform

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	corev1 "k8s.io/api/core/v1"
)

// FillTrimmed is a test aid: it sets every field of Trimmed that the pod has room for (in every
// element of the lists on the path; a nil pointer on the way is left nil, so the pod's states and
// sources stay what they are) to a non-zero value, so that a test can compare the decisions taken
// over the pod and over the pod trimmed. The annotation gets a JSON-looking value.
func FillTrimmed(p *corev1.Pod) {
	for _, f := range Trimmed {
		if err := fillPath(reflect.ValueOf(p).Elem(), splitPath(f.Path)); err != nil {
			panic(fmt.Sprintf("informertransform: Trimmed path %s: %v", f.Path, err))
		}
	}
}

// FillAll is a test aid: it sets every field of v (a pointer), to the depth the pod's types need,
// to a non-zero value: every pointer allocated, every list and map given one element.
func FillAll(v any) { fillValue(reflect.ValueOf(v).Elem(), 0) }

// splitPath splits a Trimmed path at the dots outside brackets.
func splitPath(path string) []string {
	var segs []string
	depth, start := 0, 0
	for i, r := range path {
		switch r {
		case '[':
			depth++
		case ']':
			depth--
		case '.':
			if depth == 0 {
				segs = append(segs, path[start:i])
				start = i + 1
			}
		}
	}
	return append(segs, path[start:])
}

// jsonField returns the field of struct v whose JSON name is name, looking into inline structs.
func jsonField(v reflect.Value, name string) (reflect.Value, bool) {
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		tag, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if tag == name {
			return v.Field(i), true
		}
		if tag == "" && sf.Type.Kind() == reflect.Struct {
			if f, ok := jsonField(v.Field(i), name); ok {
				return f, true
			}
		}
	}
	return reflect.Value{}, false
}

func fillPath(v reflect.Value, segs []string) error {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return fmt.Errorf("%s is no struct", v.Type())
	}
	name, index, hasIndex := strings.Cut(segs[0], "[")
	f, ok := jsonField(v, name)
	if !ok {
		return fmt.Errorf("%s has no field %q", v.Type(), name)
	}
	switch {
	case hasIndex && index != "]": // a map key
		if f.Kind() != reflect.Map || len(segs) != 1 {
			return fmt.Errorf("%s: a key of a map ends a path", segs[0])
		}
		if f.IsNil() {
			f.Set(reflect.MakeMap(f.Type()))
		}
		f.SetMapIndex(reflect.ValueOf(strings.TrimSuffix(index, "]")), reflect.ValueOf(`{"kind":"Pod"}`))
	case hasIndex: // every element
		if f.Kind() != reflect.Slice {
			return fmt.Errorf("%s is no list", segs[0])
		}
		for i := range f.Len() {
			if len(segs) == 1 {
				fillValue(f.Index(i), 0)
			} else if err := fillPath(f.Index(i), segs[1:]); err != nil {
				return err
			}
		}
	case len(segs) == 1:
		fillValue(f, 0)
	default:
		return fillPath(f, segs[1:])
	}
	return nil
}

var (
	timeType     = reflect.TypeFor[metav1.Time]()
	quantityType = reflect.TypeFor[resource.Quantity]()
	intstrType   = reflect.TypeFor[intstr.IntOrString]()
)

func fillValue(v reflect.Value, depth int) {
	if depth > 10 {
		return
	}
	switch v.Type() {
	case timeType:
		v.Set(reflect.ValueOf(metav1.NewTime(time.Unix(1700000000, 0))))
		return
	case quantityType:
		v.Set(reflect.ValueOf(resource.MustParse("1")))
		return
	case intstrType:
		v.Set(reflect.ValueOf(intstr.FromInt32(1)))
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillValue(v.Elem(), depth+1)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillValue(v.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fillValue(v.Index(0), depth+1)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fillValue(k, depth+1)
		fillValue(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	}
}
