package propagator

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDependenciesOnePhase: the propagator asks the dependencies
// component what the pods need and delivers it from one phase
// (dependencies, with holdChosen and applyDependencies, which it calls),
// and lets go of it from one place (leaveNamespace, which a cluster left,
// a namespace the pods left and a deleted Workload go through). It reads
// the package's source: a call from anywhere else fails.
func TestDependenciesOnePhase(t *testing.T) {
	allowed := map[string][]string{
		"deps.Observe":         {"dependencies", "holdChosen"},
		"deps.Apply":           {"applyDependencies"},
		"dependencies.Release": {"leaveNamespace"},
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range parsed.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				name := calleeName(call.Fun)
				for callee, in := range allowed {
					if !strings.HasSuffix(name, callee) {
						continue
					}
					seen[callee]++
					if !slices.Contains(in, fn.Name.Name) {
						t.Errorf("%s: %s calls %s; only %v may", f, fn.Name.Name, name, in)
					}
				}
				return true
			})
		}
	}
	for callee := range allowed {
		if seen[callee] == 0 {
			t.Errorf("no call of %s found: the test no longer reads what it guards", callee)
		}
	}
}

// calleeName spells a called function as its source does (s.deps.Apply).
func calleeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return calleeName(e.X) + "." + e.Sel.Name
	}
	return ""
}
