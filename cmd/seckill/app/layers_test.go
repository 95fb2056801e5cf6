package app

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// The import rules of docs/ARCHITECTURE.md ("Which package may import
// which"), checked on the real build graph with go list. The areas and
// what each may import are read from Main's areas (areas.go).
func TestLayers(t *testing.T) {
	if testing.Short() {
		t.Skip("go list over the module")
	}
	const mod = "github.com/seckill/seckill/"
	type pkg struct {
		ImportPath string
		Imports    []string
		Deps       []string
	}
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports,Deps", mod+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs[strings.TrimPrefix(p.ImportPath, mod)] = p
	}
	// An area is a promotion's service package (Main's areas), or one of the
	// platform's own (accounts, the audit log). An area imports only the areas
	// it names in Uses (checkout composes goods and coupons). db/inbox is a
	// delivery channel (like db/outbound) that areas write to, not an area.
	mayImport := map[string]map[string]bool{mod + "db/account": {}, mod + "db/audit": {}}
	m := &Main{}
	byName := map[string]string{}
	for _, a := range m.areas() {
		if a.Service != nil {
			byName[a.Name] = reflect.TypeOf(a.Service).Elem().PkgPath()
			mayImport[byName[a.Name]] = map[string]bool{}
		}
	}
	for _, a := range m.areas() {
		for _, u := range a.Uses {
			if byName[u] == "" {
				t.Fatalf("area %s uses %q, which is no area with a service", a.Name, u)
			}
			mayImport[byName[a.Name]][byName[u]] = true
		}
	}
	for _, p := range []string{"db/goods", "db/fair", "db/redpacket", "db/coupon", "db/checkout"} {
		if mayImport[mod+p] == nil {
			t.Fatalf("%s is not an area's service package: the areas are read wrong", p)
		}
	}
	isArea := func(p string) bool { return mayImport[p] != nil }
	// Main holds areas, not services: an area's service is reached through
	// its Area (app.AreaService[S]), so adding a promotion adds no field to Main.
	mt := reflect.TypeOf(Main{})
	for i := 0; i < mt.NumField(); i++ {
		ft := mt.Field(i).Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if p := ft.PkgPath(); p != mod+"db/account" && p != mod+"db/audit" && isArea(p) {
			t.Errorf("Main.%s is %s's service: Main holds areas (Main.Areas), not their services", mt.Field(i).Name, strings.TrimPrefix(p, mod))
		}
	}
	// Handlers reach services through their area: each handler type holds
	// the services of one area and of the areas it uses, never a field for
	// every service.
	checkHandlerTypes(t, mod, mayImport)
	// Test hooks do not ship: a door a package's behaviour tests need into
	// it is in its own export_test.go, and test set-up several packages
	// share is in a *test package production never imports.
	checkNoTestHooks(t, "../../../db")
	// An area's rooms are the packages below its own (db/goods/internal/sale,
	// db/goods/internal/orders): each has one job, and they are layered, each room
	// importing only the rooms below it. The sale core knows nothing of the
	// ledger, the catalog or fair sales (they hand it a stage); fair sales plug
	// in from above.
	// Fair sales' rooms: the public rules (verify) know nothing of the
	// service, the raffle knows the rules, and the fair-sale service
	// embeds the raffle.
	rooms := map[string][]string{
		"db/goods/internal/sale":   {},
		"db/goods/internal/orders": {"db/goods/internal/sale"},
		"db/goods":                 {"db/goods/internal/sale", "db/goods/internal/orders"},
		"db/fair/verify":           {},
		"db/fair/raffle":           {"db/fair/verify"},
		"db/fair":                  {"db/fair/raffle", "db/fair/verify"},
	}
	areaOfRoom := func(p string) string { // the area a room belongs to ("" for none)
		for a := range mayImport {
			if strings.HasPrefix(p, a+"/") {
				return a
			}
		}
		return ""
	}
	storage := []string{"github.com/mattn/go-sqlite3", "github.com/jackc/pgx", "github.com/alicebob/miniredis", "github.com/redis/go-redis", "net/smtp", "github.com/hibiken/asynq"}

	for room, below := range rooms {
		p, ok := pkgs[room]
		if !ok {
			t.Fatalf("room %s not found", room)
		}
		allowed := map[string]bool{}
		for _, b := range below {
			allowed[mod+b] = true
		}
		own := areaOfRoom(mod + room) // the area the room belongs to (itself for an area's own package)
		if own == "" {
			own = mod + room
		}
		for _, imp := range p.Imports {
			// Rooms of an area this one uses are open to it (but the goods' engine: below).
			if _, isRoom := rooms[strings.TrimPrefix(imp, mod)]; isRoom && !allowed[imp] && !mayImport[own][imp] && !mayImport[own][areaOfRoom(imp)] {
				t.Errorf("room %s imports %s: a room imports only the rooms below it (%v)", room, strings.TrimPrefix(imp, mod), below)
			}
			// A room may import the areas its own area uses (the raffle, the goods), no other.
			if isArea(imp) && imp != mod+room && !mayImport[own][imp] {
				t.Errorf("room %s imports area %s", room, strings.TrimPrefix(imp, mod))
			}
		}
	}
	// No package of db holds several jobs: past 3,000 lines (tests and
	// generated code aside) it is rooms asking to be born; and fair sales
	// live in db/fair, not in the goods' rooms.
	for name := range pkgs {
		if !strings.HasPrefix(name, "db") {
			continue
		}
		files, err := filepath.Glob(filepath.Join("..", "..", "..", name, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		lines := 0
		for _, f := range files {
			base := filepath.Base(f)
			if strings.HasSuffix(base, "_test.go") {
				continue
			}
			if strings.HasPrefix(name, "db/goods") {
				for _, fair := range []string{"queue", "raffle", "pow", "fair"} {
					if strings.HasPrefix(base, fair) {
						t.Errorf("%s holds %s: fair sales live in db/fair", name, base)
					}
				}
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			lines += bytes.Count(b, []byte("\n"))
		}
		if lines > 3000 {
			t.Errorf("%s has %d lines of code (tests aside): past 3,000 a package holds several jobs; split it into rooms", name, lines)
		}
	}

	// The sale engine and the ledger are the goods' own: a package outside
	// db/goods reaches them through the goods' API (goods.Decide, its
	// Stage, goods.New), never their rooms. They live under
	// db/goods/internal/, so the compiler refuses such an import too; this
	// says why, and holds should they ever move out.
	for name, p := range pkgs {
		for _, imp := range p.Imports {
			for _, room := range []string{"db/goods/internal/sale", "db/goods/internal/orders"} {
				if imp == mod+room && name != "db/goods" && !strings.HasPrefix(name, "db/goods/") {
					t.Errorf("%s imports %s: outside the goods, reach the sale engine through db/goods", name, room)
				}
			}
		}
	}

	// Pages, the root domain package and the model know nothing that stores anything.
	for _, name := range []string{"views", "db", "db/model"} {
		p, ok := pkgs[name]
		if !ok {
			t.Fatalf("package %s not found", name)
		}
	deps:
		for _, d := range p.Deps {
			for _, s := range storage {
				if strings.HasPrefix(d, s) {
					t.Errorf("%s depends on %s (through its imports); it may use only plain types", name, d)
					break deps
				}
			}
		}
	}
	// The live hub (web/wshub) turns live events into socket frames: of this
	// module it may use only the domain's codes, the model, the event bus and
	// the loops' lifecycle, and only web, which mounts it, imports it.
	hubMay := map[string]bool{mod + "db": true, mod + "db/model": true, mod + "db/live": true, mod + "db/lifecycle": true}
	if _, ok := pkgs["web/wshub"]; !ok {
		t.Fatal("package web/wshub not found")
	}
	for name, p := range pkgs {
		for _, imp := range p.Imports {
			switch {
			case name == "web/wshub" && strings.HasPrefix(imp, mod) && !hubMay[imp]:
				t.Errorf("the live hub imports %s; it may import only db, db/model, db/live and db/lifecycle", strings.TrimPrefix(imp, mod))
			case imp == mod+"web/wshub" && name != "web":
				t.Errorf("%s imports the live hub; only web mounts it", name)
			// Areas do not import each other, but the ones an area names in its
			// Uses: what one needs of another is an interface wired in Main.
			case isArea(mod+name) && isArea(imp) && !mayImport[mod+name][imp]:
				t.Errorf("area %s imports %s", name, strings.TrimPrefix(imp, mod))
			// An area's rooms are its own and its users': no other area reaches into them.
			case isArea(mod+name) && areaOfRoom(imp) != "" && areaOfRoom(imp) != mod+name && !mayImport[mod+name][areaOfRoom(imp)]:
				t.Errorf("area %s imports %s, a room of an area it does not use", name, strings.TrimPrefix(imp, mod))
			// Handlers reach a service through its area's package, not its rooms.
			case name == "handlers" && areaOfRoom(imp) != "":
				t.Errorf("handlers import %s: reach it through its area %s", strings.TrimPrefix(imp, mod), strings.TrimPrefix(areaOfRoom(imp), mod))
			// Task definitions and handlers take interfaces; the areas import tasks, never the reverse.
			case name == "tasks" && (isArea(imp) || areaOfRoom(imp) != ""):
				t.Errorf("tasks imports area %s", strings.TrimPrefix(imp, mod))
			// Infrastructure serves the areas and never reaches up into them or the web
			// (the demo seeder and the test harnesses, dbtest and goodstest, aside).
			case strings.HasPrefix(name, "db/") && !isArea(mod+name) && areaOfRoom(mod+name) == "" && name != "db/demo" && name != "db/dbtest" && name != "db/goods/goodstest" &&
				(isArea(imp) || strings.HasPrefix(imp, mod+"web") || strings.HasPrefix(imp, mod+"handlers")):
				t.Errorf("infrastructure %s imports %s", name, strings.TrimPrefix(imp, mod))
			// Services know no HTTP or HTML.
			case strings.HasPrefix(name, "db") && (strings.HasPrefix(imp, mod+"web") || strings.HasPrefix(imp, mod+"handlers") ||
				strings.HasPrefix(imp, mod+"views") || strings.HasPrefix(imp, "github.com/gofiber/")):
				t.Errorf("%s imports %s: services know no HTTP or HTML", name, imp)
			// Handlers call services; they do not reach into storage.
			case name == "handlers" && (strings.HasPrefix(imp, mod+"db/sqldb") || strings.HasPrefix(imp, mod+"db/rdb") || strings.HasPrefix(imp, "github.com/redis/go-redis")):
				t.Errorf("handlers import %s", imp)
			}
		}
	}
}

// checkHandlerTypes parses the handlers package and checks that no struct
// in it holds services of areas that do not use each other.
// maxHandlerSurface is the most methods a handler's interface of a service has.
const maxHandlerSurface = 21

func checkHandlerTypes(t *testing.T, mod string, mayImport map[string]map[string]bool) {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "handlers", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		imports := map[string]string{} // local name → area package
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if mayImport[p] == nil || p == mod+"db/account" || p == mod+"db/audit" {
				continue
			}
			name := p[strings.LastIndex(p, "/")+1:]
			if im.Name != nil {
				name = im.Name.Name
			}
			imports[name] = p
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			if it, ok := ts.Type.(*ast.InterfaceType); ok {
				// A handler sees a narrow surface of a service: what it calls.
				if n := len(it.Methods.List); n > maxHandlerSurface {
					t.Errorf("handlers.%s has %d methods: a handler's view of a service is at most %d (split it by who calls)", ts.Name.Name, n, maxHandlerSurface)
				}
				return false
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return false
			}
			held := map[string]bool{}
			for _, fld := range st.Fields.List {
				// The goods' service is a chain of rooms (about 100 methods, raw
				// handles among them): handlers hold an interface of it instead.
				if star, ok := fld.Type.(*ast.StarExpr); ok {
					if sel, ok := star.X.(*ast.SelectorExpr); ok {
						if x, ok := sel.X.(*ast.Ident); ok && imports[x.Name] == mod+"db/goods" && sel.Sel.Name == "Service" {
							t.Errorf("handlers.%s holds *goods.Service: hold a narrow interface of what it calls (handlers.GoodsShop, GoodsMerchant)", ts.Name.Name)
						}
					}
				}
				ast.Inspect(fld.Type, func(n ast.Node) bool {
					if sel, ok := n.(*ast.SelectorExpr); ok {
						if x, ok := sel.X.(*ast.Ident); ok && imports[x.Name] != "" {
							held[imports[x.Name]] = true
						}
					}
					return true
				})
			}
			for owner := range held {
				uses := true
				for other := range held {
					uses = uses && (other == owner || mayImport[owner][other])
				}
				if uses {
					return false
				}
			}
			if len(held) > 0 {
				t.Errorf("handlers.%s holds the services of %d areas that do not use each other: give each area its handler type", ts.Name.Name, len(held))
			}
			return false
		})
	}
}

// shippedHooks are the exported hooks production code itself calls, each
// with where: checkNoTestHooks allows them.
var shippedHooks = map[string]string{
	"fair.SetGrabHook": "the load bench slows an in-process server's grabs (cmd/seckill/bench/scenarios/fair_outflow.go)",
}

// checkNoTestHooks fails on a test hook in the production files under dir
// (not _test.go, not in a package directory named *test): a file named
// testhooks.go, or an exported function, method, type, variable or
// constant named *ForTest or *Hook (go-redis's hook interface methods,
// DialHook and the like, are a client's, not ours to rename).
func checkNoTestHooks(t *testing.T, dir string) {
	t.Helper()
	redisHook := map[string]bool{"DialHook": true, "ProcessHook": true, "ProcessPipelineHook": true}
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if strings.HasSuffix(d.Name(), "test") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		if d.Name() == "testhooks.go" {
			t.Errorf("%s ships test hooks: move them into the package's export_test.go", path)
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		check := func(id *ast.Ident, method bool) {
			name := id.Name
			if !id.IsExported() || !(strings.HasSuffix(name, "ForTest") || strings.HasSuffix(name, "Hook")) ||
				(method && redisHook[name]) || shippedHooks[f.Name.Name+"."+name] != "" {
				return
			}
			t.Errorf("%s: %s.%s ships a test hook: a door for tests goes in the package's export_test.go", fset.Position(id.Pos()), f.Name.Name, name)
		}
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				check(decl.Name, decl.Recv != nil)
			case *ast.GenDecl:
				for _, spec := range decl.Specs {
					switch spec := spec.(type) {
					case *ast.TypeSpec:
						check(spec.Name, false)
					case *ast.ValueSpec:
						for _, n := range spec.Names {
							check(n, false)
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
