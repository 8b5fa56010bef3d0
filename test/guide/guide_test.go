package guide

import (
	"os"
	"path/filepath"
	"testing"
)

type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true; panic(r) }
func (r *recorder) Helper()               {}

func check(t *testing.T, readme, program string) bool {
	dir := t.TempDir()
	rp, pp := filepath.Join(dir, "README.md"), filepath.Join(dir, "main.go")
	if err := os.WriteFile(rp, []byte(readme), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pp, []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &recorder{TB: t}
	func() {
		defer func() {
			if p := recover(); p != nil && p != r {
				panic(p)
			}
		}()
		SnippetIsIn(r, rp, "Build it", pp)
	}()
	return !r.failed
}

func TestSnippetIsIn(t *testing.T) {
	const program = "package main\n\nfunc main() {\n\ta := 1\n\tb := 2\n\t_ = a + b\n}\n"
	snippet := func(body string) string { return "# Guide\n\nBuild it:\n\n```go\n" + body + "```\n" }
	if !check(t, snippet("a := 1\nb := 2\n_ = a + b\n"), program) {
		t.Error("a snippet taken from the program was refused")
	}
	if check(t, snippet("a := 1\nb := 3\n_ = a + b\n"), program) {
		t.Error("a snippet with a line not in the program passed")
	}
	if check(t, snippet("a := 1\n"), program) {
		t.Error("a one-line snippet passed")
	}
	if check(t, "# Guide\n\nno intro here\n", program) {
		t.Error("a guide without the introduction passed")
	}
}
