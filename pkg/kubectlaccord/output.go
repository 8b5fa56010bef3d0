package kubectlaccord

import (
	"encoding/json"
	"io"

	"sigs.k8s.io/yaml"
)

// printObject writes v as indented JSON or as YAML.
func printObject(w io.Writer, output string, v any) error {
	if output == "yaml" {
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
