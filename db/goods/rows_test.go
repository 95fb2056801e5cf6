package goods

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// Every loop over SQL rows in the goods area (its rooms and fair sales) is
// followed by a check of rows.Err(): a read that broke off must not pass for
// the end of the rows.
func TestRowsErrChecked(t *testing.T) {
	var files []string
	for _, dir := range []string{".", "sale", "orders", "../fair"} {
		fs, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, fs...)
	}
	fset := token.NewFileSet()
	loops := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			fn, ok := n.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				return true
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				loop, ok := n.(*ast.ForStmt)
				if !ok {
					return true
				}
				rows, ok := method(loop.Cond, "Next")
				if !ok {
					return true
				}
				loops++
				checked := false
				ast.Inspect(fn.Body, func(n ast.Node) bool {
					if e, ok := n.(ast.Expr); ok && n.Pos() > loop.End() {
						if r, ok := method(e, "Err"); ok && r == rows {
							checked = true
						}
					}
					return !checked
				})
				if !checked {
					t.Errorf("%s: %s.Next() loop in %s without a later %s.Err()", fset.Position(loop.Pos()), rows, fn.Name.Name, rows)
				}
				return true
			})
			return false
		})
	}
	if loops == 0 {
		t.Fatal("found no rows loop: the check is looking in the wrong place")
	}
}

// method reports whether e is a call x.name() on an identifier x, and x's name.
func method(e ast.Expr, name string) (string, bool) {
	call, ok := e.(*ast.CallExpr)
	if !ok || len(call.Args) != 0 {
		return "", false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return "", false
	}
	x, ok := sel.X.(*ast.Ident)
	if !ok {
		return "", false
	}
	return x.Name, true
}
