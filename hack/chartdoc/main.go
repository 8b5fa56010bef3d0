// Command chartdoc writes the Helm chart's values reference (manifests/charts/accord/README.md) from
// its values.schema.json and values.yaml: `make chart-docs`.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/accord-sched/accord/manifests/render"
)

func main() {
	dir := "manifests/charts/accord"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	doc, err := render.ValuesReference(dir)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, render.ValuesReferenceFile), []byte(doc), 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chartdoc:", err)
		os.Exit(1)
	}
}
