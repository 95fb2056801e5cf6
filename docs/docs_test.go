// Package docs_test keeps the docs true: every file, package and Go type
// they name exists.
package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository, from this package's folder.
const root = ".."

var (
	backticked = regexp.MustCompile("`([^`\n]+)`")
	// a path in the repository: a top folder's, or a file at the top.
	repoPath = regexp.MustCompile(`^(cmd|db|docs|handlers|static|tasks|views|web)/[A-Za-z0-9_./-]*$|^[A-Za-z0-9_-]+\.(md|go|yaml|mod)$|^Makefile$`)
	// pkg.Name: a package's declaration (backend.Backend, sale.GrabRequest).
	pkgIdent = regexp.MustCompile(`^([a-z][a-z0-9]*)\.([A-Z][A-Za-z0-9_]*)$`)
	// Type.Member: a type's method or field (Handlers.FormRefused).
	typeMember = regexp.MustCompile(`^([A-Z][A-Za-z0-9_]*)\.([A-Za-z][A-Za-z0-9_]*)(\(\))?$`)
)

// TestDocsNameWhatExists reads README.md and every Markdown file under docs/
// and checks each backticked name that looks like the repository's: a path
// (db/goods/internal/sale/engine.go, docs/GOODS.md; a bare file name in a folder its
// line names) must exist; pkg.Name must be declared at the top of a package
// of that name, or be a method of one of its types; Type.Member must be a
// method or a field of a type of the repository's of that name. A path with
// a placeholder (db/<area>, NNNN_name.sql) is an example and let be.
func TestDocsNameWhatExists(t *testing.T) {
	decls := declarations(t)
	docs := []string{filepath.Join(root, "README.md")}
	err := filepath.WalkDir(root+"/docs", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			docs = append(docs, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range docs {
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		fence := false
		for i, line := range strings.Split(string(raw), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fence = !fence
				continue
			}
			if fence {
				continue
			}
			var dirs []string // the folders the line names, where its bare file names are
			for _, m := range backticked.FindAllStringSubmatch(line, -1) {
				if fi, err := os.Stat(filepath.Join(root, m[1])); err == nil && fi.IsDir() && strings.Contains(m[1], "/") {
					dirs = append(dirs, m[1])
				}
			}
			for _, m := range backticked.FindAllStringSubmatch(line, -1) {
				if p := problem(m[1], dirs, decls); p != "" {
					t.Errorf("%s:%d: `%s` %s", strings.TrimPrefix(doc, root+"/"), i+1, m[1], p)
				}
			}
		}
	}
}

// problem says what is wrong with a name a doc gives ("" when nothing is,
// or when it is not a name of the repository's).
func problem(name string, dirs []string, d decls) string {
	name = strings.TrimSuffix(name, "()")
	if repoPath.MatchString(name) {
		path := name
		if i := strings.IndexByte(path, ':'); i > 0 {
			path = path[:i]
		}
		if strings.ContainsAny(path, "*{<…") || strings.Contains(path, "NNNN") { // a pattern or a placeholder
			return ""
		}
		if !strings.Contains(path, "/") && path != "Makefile" {
			return bareFile(path, dirs, d)
		}
		if _, err := os.Stat(filepath.Join(root, path)); err != nil {
			return "is no file or folder of the repository"
		}
		return ""
	}
	if m := pkgIdent.FindStringSubmatch(name); m != nil {
		idents, ok := d.pkgs[m[1]]
		if !ok {
			return "" // not a package of ours (time.Duration, redis.Nil)
		}
		if !idents[m[2]] {
			return "is declared in no package " + m[1]
		}
		return ""
	}
	if m := typeMember.FindStringSubmatch(name); m != nil {
		members, ok := d.types[m[1]]
		if !ok {
			if d.any[m[1]] {
				return ""
			}
			return "names no type of the repository"
		}
		if !members[m[2]] {
			return "is no method or field of a type " + m[1]
		}
	}
	return ""
}

// bareFile checks a file named without its folder: in a folder the line
// names, else anywhere in the repository.
func bareFile(name string, dirs []string, d decls) string {
	if len(dirs) == 0 {
		if d.files[name] {
			return ""
		}
		return "is no file of the repository"
	}
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(root, dir, name)); err == nil {
			return ""
		}
	}
	return "is in none of the folders its line names (" + strings.Join(dirs, ", ") + ")"
}

type decls struct {
	files map[string]bool            // every file's base name
	pkgs  map[string]map[string]bool // package name → its top-level names
	types map[string]map[string]bool // type name → its methods and fields
	any   map[string]bool            // every top-level name (a Type.Member's left may be a value)
}

// declarations reads every Go file of the repository's.
func declarations(t *testing.T) decls {
	d := decls{files: map[string]bool{}, pkgs: map[string]map[string]bool{}, types: map[string]map[string]bool{}, any: map[string]bool{}}
	member := func(typ, name string) {
		if d.types[typ] == nil {
			d.types[typ] = map[string]bool{}
		}
		d.types[typ][name] = true
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && (strings.HasPrefix(e.Name(), ".") || e.Name() == "testdata" || e.Name() == "node_modules") && path != root {
			return filepath.SkipDir
		}
		if !e.IsDir() {
			d.files[e.Name()] = true
		}
		if e.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil // a file that does not parse is the compiler's to report
		}
		pkg := f.Name.Name
		if d.pkgs[pkg] == nil {
			d.pkgs[pkg] = map[string]bool{}
		}
		for _, decl := range f.Decls {
			switch x := decl.(type) {
			case *ast.FuncDecl:
				if x.Recv == nil {
					d.pkgs[pkg][x.Name.Name], d.any[x.Name.Name] = true, true
					continue
				}
				recv := x.Recv.List[0].Type
				for {
					switch r := recv.(type) {
					case *ast.StarExpr:
						recv = r.X
						continue
					case *ast.IndexExpr:
						recv = r.X
						continue
					case *ast.IndexListExpr:
						recv = r.X
						continue
					}
					break
				}
				if id, ok := recv.(*ast.Ident); ok {
					member(id.Name, x.Name.Name)
					d.pkgs[pkg][x.Name.Name] = true // pkg.Method: a method of one of pkg's types
				}
			case *ast.GenDecl:
				for _, s := range x.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						d.pkgs[pkg][s.Name.Name], d.any[s.Name.Name] = true, true
						if d.types[s.Name.Name] == nil {
							d.types[s.Name.Name] = map[string]bool{}
						}
						var fields *ast.FieldList
						switch st := s.Type.(type) {
						case *ast.StructType:
							fields = st.Fields
						case *ast.InterfaceType:
							fields = st.Methods
						}
						if fields != nil {
							for _, fl := range fields.List {
								for _, n := range fl.Names {
									member(s.Name.Name, n.Name)
								}
								if len(fl.Names) == 0 { // embedded: its name is a field
									typ := fl.Type
									if st, ok := typ.(*ast.StarExpr); ok {
										typ = st.X
									}
									switch e := typ.(type) {
									case *ast.Ident:
										member(s.Name.Name, e.Name)
									case *ast.SelectorExpr:
										member(s.Name.Name, e.Sel.Name)
									}
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							d.pkgs[pkg][n.Name], d.any[n.Name] = true, true
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
	return d
}

// TestCodeCitesSectionsThatExist reads the repository's Go files for the
// sections of the docs their comments cite ((docs/OPERATIONS.md, "Abuse
// limits")): each must be a heading of that doc.
func TestCodeCitesSectionsThatExist(t *testing.T) {
	cite := regexp.MustCompile(`\((README\.md|README|docs/[A-Za-z_]+\.md), "([^"]+)"\)`)
	headings := map[string]map[string]bool{}
	heads := func(doc string) map[string]bool {
		if h, ok := headings[doc]; ok {
			return h
		}
		h := map[string]bool{}
		if doc == "README" {
			doc = "README.md"
		}
		raw, _ := os.ReadFile(filepath.Join(root, doc))
		for _, line := range strings.Split(string(raw), "\n") {
			if strings.HasPrefix(line, "#") {
				h[strings.TrimSpace(strings.TrimLeft(line, "#"))] = true
			}
		}
		headings[doc] = h
		return h
	}
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(raw), "\n") {
			for _, m := range cite.FindAllStringSubmatch(line, -1) {
				if !heads(m[1])[m[2]] {
					t.Errorf("%s:%d: cites %s, %q, which has no such heading", strings.TrimPrefix(path, root+"/"), i+1, m[1], m[2])
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
