package dbtest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver for the admin connection
	"github.com/seckill/seckill/db/sqldb"
)

var (
	announceDB sync.Once
	pgOnce     sync.Once
	pg         *pgServer
	pgErr      error
	databases  atomic.Int64 // numbers each test database within the process
)

// pgServer is the PostgreSQL server named by DATABASE_URL: a connection to
// its DATABASE_URL database, which only creates and drops the tests' own,
// and the migrated template they are cloned from.
type pgServer struct {
	base     *url.URL
	admin    *sql.DB
	template string
	digest   string
}

// templateLock is the advisory lock (in the DATABASE_URL database) under
// which one test process at a time builds the template.
const templateLock = 0x5ec_7e57

// DatabaseURL returns a durable store for this test alone: the URL of a
// fresh PostgreSQL database, cloned from a template with every migration
// applied, when DATABASE_URL (postgres://…) is set; "" (the test runs on
// SQLite) when it is not. The database is dropped when the test ends.
func DatabaseURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv("DATABASE_URL")
	announceDB.Do(func() {
		if base == "" {
			fmt.Fprintln(os.Stderr, "dbtest: DATABASE_URL unset, tests use SQLite files in temp folders")
		} else {
			fmt.Fprintf(os.Stderr, "dbtest: tests use PostgreSQL at %s, a fresh database each\n", redact(base))
		}
	})
	if base == "" {
		return ""
	}
	pgOnce.Do(func() { pg, pgErr = openPGServer(base) })
	if pgErr != nil {
		t.Fatalf("dbtest: DATABASE_URL: %v", pgErr)
	}
	return createDatabase(t, pg.template)
}

// createDatabase makes a database for the test alone as a copy of template
// and drops it when the test ends.
func createDatabase(t testing.TB, template string) string {
	t.Helper()
	pgOnce.Do(func() { pg, pgErr = openPGServer(os.Getenv("DATABASE_URL")) })
	if pgErr != nil {
		t.Fatalf("dbtest: DATABASE_URL: %v", pgErr)
	}
	ctx, cancel := testContext(t)
	defer cancel()
	name := fmt.Sprintf("seckill_t%s_%d_%d", pg.digest[:8], os.Getpid(), databases.Add(1))
	// Cloning waits (up to 5 s, in the server) for a session that still
	// lingers on the template to leave.
	if _, err := pg.admin.ExecContext(ctx, `CREATE DATABASE `+name+` TEMPLATE `+template); err != nil {
		t.Fatalf("dbtest: create database %s: %v", name, err)
	}
	// Registered before the test opens its pools, so it runs after they close.
	t.Cleanup(func() {
		if _, err := pg.admin.ExecContext(context.Background(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
			t.Errorf("dbtest: drop database %s: %v", name, err)
		}
	})
	u := *pg.base
	u.Path = "/" + name
	return u.String()
}

// EmptyPostgresURL returns the URL of a fresh PostgreSQL database with
// nothing in it, not even the migrations, for tests of migrating; it
// skips the test when DATABASE_URL is unset.
func EmptyPostgresURL(t testing.TB) string {
	t.Helper()
	if os.Getenv("DATABASE_URL") == "" {
		t.Skip("dbtest: DATABASE_URL unset; this test needs PostgreSQL (DATABASE_URL=postgres://postgres@127.0.0.1:5433/postgres?sslmode=disable)")
	}
	return createDatabase(t, "template0")
}

// DB opens the durable store of this run for the test alone and closes it
// when the test ends: a fresh PostgreSQL database when DATABASE_URL is set,
// else a SQLite file in a temp folder.
func DB(t testing.TB) *sqldb.DB {
	t.Helper()
	u := DatabaseURL(t)
	if u == "" {
		return sqliteDB(t)
	}
	ctx, cancel := testContext(t)
	defer cancel()
	s, err := sqldb.OpenPostgres(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// openPGServer connects to DATABASE_URL and makes sure the template for
// today's migrations exists. The template's name carries a digest of the
// migrations, so a changed migration gets a template of its own; a test
// process builds a missing one under an advisory lock while others wait.
func openPGServer(base string) (*pgServer, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, fmt.Errorf("%q is not a postgres:// URL", redact(base))
	}
	migs, err := sqldb.Migrations(sqldb.Postgres)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	for _, m := range migs {
		fmt.Fprintf(h, "%s\x00%s\x00", m.Name, m.SQL)
	}
	digest := hex.EncodeToString(h.Sum(nil))
	admin, err := sql.Open("pgx", base)
	if err != nil {
		return nil, err
	}
	admin.SetMaxOpenConns(4)
	s := &pgServer{base: u, admin: admin, template: "seckill_tpl_" + digest[:12], digest: digest}
	ctx, cancel := context.WithTimeout(context.Background(), claimTTL)
	defer cancel()
	if err := s.buildTemplate(ctx); err != nil {
		admin.Close()
		return nil, fmt.Errorf("template database %s: %w", s.template, err)
	}
	return s, nil
}

func (s *pgServer) buildTemplate(ctx context.Context) error {
	conn, err := s.admin.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, templateLock); err != nil {
		return err
	}
	defer conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1)`, templateLock)
	var exists bool
	if err := conn.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, s.template).Scan(&exists); err != nil || exists {
		return err
	}
	// Built under another name and renamed when complete, so a template
	// that exists is always whole, even after a crash mid-build.
	building := s.template + "_new"
	if _, err := conn.ExecContext(ctx, `DROP DATABASE IF EXISTS `+building+` WITH (FORCE)`); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, `CREATE DATABASE `+building); err != nil {
		return err
	}
	u := *s.base
	u.Path = "/" + building
	db, err := sqldb.OpenPostgres(ctx, u.String())
	if err != nil {
		return err
	}
	db.Close()
	_, err = conn.ExecContext(ctx, `ALTER DATABASE `+building+` RENAME TO `+s.template)
	return err
}

// redact drops the password from a database URL for the log.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unreadable URL)"
	}
	return u.Redacted()
}
