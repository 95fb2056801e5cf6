package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// `seckill help` lists every command run dispatches: each case of run's
// switch, read from main.go, is a line of the help that starts with it.
func TestHelpListsEveryCommand(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	modes := map[string]string{"ModeServe": ModeServe, "ModeWeb": ModeWeb, "ModeWorker": ModeWorker}
	var dispatched []string
	ast.Inspect(f, func(n ast.Node) bool {
		fn, ok := n.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "run" {
			return true
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			cc, ok := n.(*ast.CaseClause)
			if !ok {
				return true
			}
			for _, e := range cc.List {
				switch e := e.(type) {
				case *ast.BasicLit:
					s, _ := strconv.Unquote(e.Value)
					dispatched = append(dispatched, s)
				case *ast.Ident:
					dispatched = append(dispatched, modes[e.Name])
				}
			}
			return true
		})
		return false
	})
	if len(dispatched) < 5 {
		t.Fatalf("found only %q in run's switch", dispatched)
	}
	var out strings.Builder
	if err := help(&out); err != nil {
		t.Fatal(err)
	}
	for _, name := range dispatched {
		if !strings.Contains(out.String(), "\n  "+name+" ") && !strings.Contains(out.String(), "\n  "+name+"\n") {
			t.Errorf("seckill help does not list %q:\n%s", name, out.String())
		}
	}
}
