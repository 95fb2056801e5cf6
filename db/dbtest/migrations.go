package dbtest

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/seckill/seckill/db/sqldb"
)

// SQLiteBefore makes a database file as a release that predates migration
// left it: every migration whose file name sorts below migration ("0008")
// applied and recorded. The
// test writes rows in the old shape through the returned connection, closes
// it, and opens the path with sqldb.OpenSQLite, which applies the rest.
func SQLiteBefore(t testing.TB, migration string) (path string, old *sql.DB) {
	t.Helper()
	migs, err := sqldb.Migrations(sqldb.SQLite)
	if err != nil || len(migs) == 0 {
		t.Fatalf("dbtest: no SQLite migrations: %v", err)
	}
	path = filepath.Join(t.TempDir(), "old.db")
	old, err = sql.Open("sqlite3", "file:"+path+"?_foreign_keys=on")
	if err != nil {
		t.Fatal(err)
	}
	applyBelow(t, old, migs, migration,
		// The same table sqldb.OpenSQLite keeps its record in.
		`CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')))`,
		`INSERT INTO migrations (name) VALUES (?)`)
	return path, old
}

// PostgresBefore is SQLiteBefore on PostgreSQL: a fresh database
// (EmptyPostgresURL, so the test skips when DATABASE_URL is unset) with
// every migration below migration applied and recorded. The test writes
// rows in the old shape through old, closes it, and opens url with
// sqldb.OpenPostgres, which applies the rest.
func PostgresBefore(t testing.TB, migration string) (url string, old *sql.DB) {
	t.Helper()
	url = EmptyPostgresURL(t)
	migs, err := sqldb.Migrations(sqldb.Postgres)
	if err != nil || len(migs) == 0 {
		t.Fatalf("dbtest: no PostgreSQL migrations: %v", err)
	}
	old, err = sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	applyBelow(t, old, migs, migration,
		// The same table sqldb.OpenPostgres keeps its record in.
		`CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL DEFAULT (to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')))`,
		`INSERT INTO migrations (name) VALUES ($1)`)
	return url, old
}

// applyBelow applies and records on old, one connection, every migration of
// migs whose name sorts below migration, in the record table createTable
// makes, each recorded with record (its one placeholder the name).
func applyBelow(t testing.TB, old *sql.DB, migs []sqldb.Migration, migration, createTable, record string) {
	t.Helper()
	old.SetMaxOpenConns(1)
	t.Cleanup(func() { old.Close() })
	if _, err := old.Exec(createTable); err != nil {
		t.Fatal(err)
	}
	for _, m := range migs {
		if m.Name >= migration {
			break
		}
		if _, err := old.Exec(m.SQL); err != nil {
			t.Fatalf("dbtest: apply %s: %v", m.Name, err)
		}
		if _, err := old.Exec(record, m.Name); err != nil {
			t.Fatal(err)
		}
	}
}
