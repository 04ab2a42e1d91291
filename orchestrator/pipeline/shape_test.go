package pipeline

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// packageCalls lists, per non-test file of this package, the selector
// calls whose method name is one of names (x.store.PutHeader, say).
func packageCalls(t *testing.T, names ...string) map[string][]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	out := map[string][]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(af, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && slices.Contains(names, sel.Sel.Name) {
				out[f] = append(out[f], fmt.Sprintf("%s (line %d)", sel.Sel.Name, fset.Position(call.Pos()).Line))
			}
			return true
		})
	}
	return out
}

// TestOneRunWriter pins the scheduler's one run writer: every write of a
// run's header is in settle.go (settleRecords for step ends, amend for the
// rest), so no kind or sweep keeps a compare-and-set loop of its own.
func TestOneRunWriter(t *testing.T) {
	for file, calls := range packageCalls(t, "UpdateHeader", "PutHeader", "PutHeaderAsync") {
		if file != "settle.go" {
			t.Errorf("%s writes a run's header (%s); change it through amend or settleRecords in settle.go", file, strings.Join(calls, ", "))
		}
	}
}
