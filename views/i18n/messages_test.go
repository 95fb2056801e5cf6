package i18n_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/seckill/seckill/views/i18n"
)

// TestMessagesTranslated reads the Go source of db, handlers and web and
// finds every message the server composes for a reader: a refusal's format
// (db.Errorf, db.FieldErrorf, an Error's Message), a flash
// (redirectWithFlash, redirectWithNote), a field's complaint (a FieldErrors
// entry, addField, a ...Problem func's answer) and a page's title (page). Each must
// have its Chinese in the catalog, registered as the code writes it: a
// message built with + is registered as a format with %s for what is added.
func TestMessagesTranslated(t *testing.T) {
	missing := map[string][]string{}
	for _, dir := range []string{"../../db", "../../handlers", "../../web"} {
		for msg, at := range composedMessages(t, dir) {
			if !i18n.Has(i18n.Zh, msg) {
				missing[msg] = append(missing[msg], at...)
			}
		}
	}
	msgs := make([]string, 0, len(missing))
	for m := range missing {
		msgs = append(msgs, m)
	}
	sort.Strings(msgs)
	for _, m := range msgs {
		t.Errorf("%q has no Chinese (%s)", m, strings.Join(missing[m], ", "))
	}
}

// composedMessages maps each message (or format) the Go files under dir
// compose for a reader to where they do.
func composedMessages(t *testing.T, dir string) map[string][]string {
	t.Helper()
	found := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		note := func(e ast.Expr) {
			if msg, ok := format(e); ok && strings.ContainsFunc(msg, unicode.IsLetter) && strings.Trim(msg, "%s") != "" {
				p := fset.Position(e.Pos())
				found[msg] = append(found[msg], filepath.Base(p.Filename)+":"+strconv.Itoa(p.Line))
			}
		}
		fields := map[string]bool{} // the names of the file's FieldErrors maps
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl: // a ...Problem func says what is wrong with a field
				if strings.HasSuffix(n.Name.Name, "Problem") && n.Body != nil {
					ast.Inspect(n.Body, func(n ast.Node) bool {
						if r, ok := n.(*ast.ReturnStmt); ok && len(r.Results) > 0 {
							note(r.Results[0])
						}
						return true
					})
				}
			case *ast.AssignStmt:
				for i, r := range n.Rhs {
					if cl, ok := r.(*ast.CompositeLit); ok && isFieldMap(cl.Type, path) && i < len(n.Lhs) {
						if id, ok := n.Lhs[i].(*ast.Ident); ok {
							fields[id.Name] = true
						}
					}
					if ix, ok := n.Lhs[0].(*ast.IndexExpr); ok && len(n.Lhs) == 1 {
						if id, ok := ix.X.(*ast.Ident); ok && fields[id.Name] {
							note(r)
						}
					}
				}
			case *ast.CallExpr:
				name, args := callee(n.Fun), n.Args
				switch {
				case (name == "Errorf" || name == "FieldErrorf") && len(args) >= 2 && isDB(n.Fun, f.Name.Name):
					note(args[1])
				case name == "redirectWithFlash" && len(args) == 3:
					note(args[2])
				case name == "redirectWithNote" && len(args) == 5:
					note(args[4])
				case name == "addField" && len(args) == 3:
					note(args[2])
				case name == "page" && len(args) == 2:
					note(args[1])
				}
			case *ast.CompositeLit:
				if callee(n.Type) == "FieldErrors" {
					for _, el := range n.Elts {
						if kv, ok := el.(*ast.KeyValueExpr); ok {
							note(kv.Value)
						}
					}
				}
				if callee(n.Type) != "Error" || !isDB(n.Type, f.Name.Name) {
					return true
				}
				for _, el := range n.Elts {
					if kv, ok := el.(*ast.KeyValueExpr); ok {
						if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Message" {
							note(kv.Value)
						}
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// isFieldMap tells whether a map's type makes it a form's complaints by
// field: db.FieldErrors, or a handler's map[string]string.
func isFieldMap(t ast.Expr, path string) bool {
	if callee(t) == "FieldErrors" {
		return true
	}
	m, ok := t.(*ast.MapType)
	if !ok || !strings.Contains(filepath.ToSlash(path), "handlers/") {
		return false
	}
	k, kok := m.Key.(*ast.Ident)
	v, vok := m.Value.(*ast.Ident)
	return kok && vok && k.Name == "string" && v.Name == "string"
}

// callee is the name a call or type is spelled with: Errorf, db.Errorf, h.page.
func callee(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}

// isDB tells whether a name means package db's: db.X, or X inside package db.
func isDB(e ast.Expr, pkg string) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return pkg == "db"
	case *ast.SelectorExpr:
		x, ok := e.X.(*ast.Ident)
		return ok && x.Name == "db"
	}
	return false
}

// format is the format a message expression is made from: a literal as it
// is, a sum with each part that is not a literal as %s; not ok when no part
// is a literal (a variable, a message passed on).
func format(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.ParenExpr:
		return format(e.X)
	case *ast.CallExpr: // fmt.Sprintf("format", ...)
		if sel, ok := e.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Sprintf" && len(e.Args) > 0 {
			return format(e.Args[0])
		}
		return "", false
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		l, lok := format(e.X)
		r, rok := format(e.Y)
		if !lok && !rok {
			return "", false
		}
		if !lok {
			l = "%s"
		}
		if !rok {
			r = "%s"
		}
		return l + r, true
	}
	return "", false
}

// TestMessagesMatched: a refusal made from a registered format reads in
// Chinese, its arguments carried over, and the more specific format wins.
func TestMessagesMatched(t *testing.T) {
	for en, want := range map[string]string{
		`username "ann" is taken`:                                   `用户名 "ann" 已被占用`,
		"goods 7 not found":                                         "商品 7 不存在",
		"goods 7 is not sold by a raffle (its mode is queue)":       "商品 7 不以抽签方式发售（其发售方式为 queue）",
		"only a paid order can be refunded; this one is unpaid":     "只有已支付的订单才能退款；此订单待支付",
		"“Tea” goes on sale in 5 minutes, at 2030-01-02 10:00 UTC.": "“Tea”将在 5 分钟后开售，开售时间：2030-01-02 10:00 UTC。",
		"Order #G1-0002 could not be kept: a server failed and its item had gone to another order. Your payment of ¥12.05 will be refunded.":         "订单 #G1-0002 未能保留：服务器发生故障，商品已归入另一笔订单。你支付的 ¥12.05 将原路退回。",
		"Your grab of “10 off” at 2030-01-02 10:00:05 UTC did not go through: you already hold the 2 allowed per person. It is not in your coupons.": "你于 2030-01-02 10:00:05 UTC 领取“10 off”未成功：你已持有每人限领的 2 张。该券不在你的优惠券中。",
		"You won the raffle for “Tea”: order #G1-0003 is yours. Pay it by 2030-01-02 10:15 UTC, or it passes to the next entry.":                     "恭喜你抽中“Tea”：订单 #G1-0003 归你了。请在 2030-01-02 10:15 UTC 前支付，否则将顺延给下一位报名者。",
		"Welcome, ann! Your account is ready.":                                                "欢迎你，ann！账号已开通。",
		"must be divisible by the count in a fixed packet (100 cents over 3 shares leaves 1)": "普通红包的金额须能被份数整除（100 分分成 3 份余 1）",
	} {
		if got := i18n.Zh.T(en); got != want {
			t.Errorf("%q: %q, want %q", en, got, want)
		}
	}
}
