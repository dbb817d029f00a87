package controllers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/placer-dev/placer/"

// rooms says which of placer's packages each package may import, by
// prefix: no import runs back up (a controller never imports the package
// that wires it, nor another controller), and the member side's
// connection knows nothing of the propagator.
var rooms = map[string][]string{
	"controllers/shared":       {"apis/", "internal/"},
	"controllers/cluster":      {"apis/", "internal/", "cluster", "controllers/shared"},
	"controllers/scheduler":    {"apis/", "internal/", "scheduler", "predicates", "controllers/shared"},
	"controllers/propagator":   {"apis/", "internal/", "cluster", "propagator", "scheduler", "controllers/shared", "controllers/dependencies"},
	"controllers/dependencies": {"apis/", "internal/", "cluster", "propagator", "controllers/shared"},
	"controllers/proxypod":     {"apis/", "internal/", "cluster", "controllers/shared"},
	"controllers/inventory":    {"apis/", "internal/", "cluster", "controllers/shared"},
	"cluster":                  {"apis/", "internal/"},
	"propagator":               {"apis/", "internal/", "scheduler"},
}

// TestRooms reads the imports of every non-test file of each package
// above and fails on one its room does not allow. (Tests may build what
// they need from anywhere.)
func TestRooms(t *testing.T) {
	root := filepath.Join("..")
	for pkg, allowed := range rooms {
		files, err := filepath.Glob(filepath.Join(root, pkg, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", pkg, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range parsed.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				own, ok := strings.CutPrefix(path, module)
				if !ok || allowedIn(own, allowed) {
					continue
				}
				t.Errorf("%s imports %s: its room allows only %v", f, own, allowed)
			}
		}
	}
}

func allowedIn(pkg string, allowed []string) bool {
	for _, a := range allowed {
		if strings.HasSuffix(a, "/") && strings.HasPrefix(pkg, a) || pkg == a {
			return true
		}
	}
	return false
}

// maxFunctionLines bounds a function outside test/ and tests, in lines
// from its signature to its closing brace.
const maxFunctionLines = 80

// TestFunctionLength fails on a function longer than maxFunctionLines in
// any non-test Go file of the module outside test/ (generated deepcopy
// left out).
func TestFunctionLength(t *testing.T) {
	root := filepath.Join("..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (name == "test" || name == "bin" || strings.HasPrefix(name, ".") || name == "_output") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasPrefix(filepath.Base(path), "zz_generated") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			if n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; n > maxFunctionLines {
				t.Errorf("%s: %s is %d lines, more than %d", path, fn.Name.Name, n, maxFunctionLines)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
