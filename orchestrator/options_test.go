package orchestrator_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The doc comment of New, in the orchestrator and in its pipeline and chat
// packages, names every option of the package: a reader finds them all in
// one place.
func TestNewDocListsEveryOption(t *testing.T) {
	for _, dir := range []string{".", "pipeline", "chat"} {
		t.Run(dir, func(t *testing.T) { newDocListsEveryOption(t, dir) })
	}
}

func newDocListsEveryOption(t *testing.T, dir string) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var doc string
	var opts []string
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil {
				continue
			}
			if fn.Name.Name == "New" {
				doc = fn.Doc.Text()
			}
			if r := fn.Type.Results; r != nil && len(r.List) == 1 {
				if id, ok := r.List[0].Type.(*ast.Ident); ok && id.Name == "Option" {
					opts = append(opts, fn.Name.Name)
				}
			}
		}
	}
	if len(opts) == 0 {
		t.Fatal("found no options")
	}
	for _, o := range opts {
		if !regexp.MustCompile(`\b` + o + `\b`).MatchString(doc) {
			t.Errorf("the doc of New does not name option %s: add it to the list", o)
		}
	}
}
