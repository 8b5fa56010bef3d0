// Package guide checks that a guide's Go snippet is the code of a program that is built and run, so
// the snippet a reader copies cannot drift from a working example.
package guide

import (
	"os"
	"strings"
	"testing"
)

// SnippetIsIn fails t unless the first ```go block after intro in the Markdown file readme has at
// least three non-empty lines and each of them (trimmed) is a line of the Go file program.
func SnippetIsIn(t testing.TB, readme, intro, program string) {
	t.Helper()
	doc, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	code, err := os.ReadFile(program)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), intro)
	if !ok {
		t.Fatalf("%s has no %q", readme, intro)
	}
	_, block, ok := strings.Cut(after, "```go\n")
	if !ok {
		t.Fatalf("%s: no Go block after %q", readme, intro)
	}
	block, _, _ = strings.Cut(block, "```")
	lines := map[string]bool{}
	for _, l := range strings.Split(string(code), "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	n := 0
	for _, l := range strings.Split(block, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		n++
		if !lines[l] {
			t.Errorf("%s: the guide's line %q is not in %s", readme, l, program)
		}
	}
	if n < 3 {
		t.Fatalf("%s: the guide's snippet has %d lines", readme, n)
	}
}
