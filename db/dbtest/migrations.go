package dbtest

import (
	"database/sql"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"testing"
)

// SQLiteBefore makes a database file as a release that predates migration
// left it: every migration whose file name sorts below migration ("0008")
// applied and recorded. The
// test writes rows in the old shape through the returned connection, closes
// it, and opens the path with sqlite.Open, which applies the rest.
func SQLiteBefore(t testing.TB, migration string) (path string, old *sql.DB) {
	t.Helper()
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("dbtest: cannot locate the migrations")
	}
	dir := filepath.Join(filepath.Dir(self), "..", "sqlite", "migrations")
	names, err := filepath.Glob(filepath.Join(dir, "*.sql"))
	if err != nil || len(names) == 0 {
		t.Fatalf("dbtest: no migrations in %s: %v", dir, err)
	}
	sort.Strings(names)
	path = filepath.Join(t.TempDir(), "old.db")
	old, err = sql.Open("sqlite3", "file:"+path+"?_foreign_keys=on")
	if err != nil {
		t.Fatal(err)
	}
	old.SetMaxOpenConns(1)
	t.Cleanup(func() { old.Close() })
	// The same table sqlite.Open keeps its record in.
	if _, err := old.Exec(`CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')))`); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		base := filepath.Base(name)
		if base >= migration {
			break
		}
		buf, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := old.Exec(string(buf)); err != nil {
			t.Fatalf("dbtest: apply %s: %v", base, err)
		}
		if _, err := old.Exec(`INSERT INTO migrations (name) VALUES (?)`, base); err != nil {
			t.Fatal(err)
		}
	}
	return path, old
}
