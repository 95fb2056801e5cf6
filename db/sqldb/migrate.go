package sqldb

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
)

// Each dialect has its own migrations, NNNN_name.sql, applied once each in
// name order. PostgreSQL's start at 0008_schema.sql, SQLite's end state after
// its first eight (it never had their history); a later migration is written
// for both under the same name, and TestSchemasAgree holds them together.
//
//go:embed migrations/sqlite/*.sql migrations/postgres/*.sql
var migrationFS embed.FS

// Migration is one embedded migration file.
type Migration struct {
	Name string // NNNN_name.sql, as recorded in the migrations table
	SQL  string
}

// Migrations returns the dialect's migrations in the order they apply.
func Migrations(d Dialect) ([]Migration, error) {
	names, err := fs.Glob(migrationFS, "migrations/"+string(d)+"/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := make([]Migration, 0, len(names))
	for _, name := range names {
		buf, err := migrationFS.ReadFile(name)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Name: path.Base(name), SQL: string(buf)})
	}
	return out, nil
}

// migrationLock is the PostgreSQL advisory lock (scoped to the database)
// that lets one process at a time migrate; the others wait, then find
// nothing left to apply.
const migrationLock = 0x5ec_c111_d8 // "seckill db"

// migrate applies every migration not yet recorded, each in its own
// transaction, on one connection. On PostgreSQL that connection holds the
// advisory lock throughout; SQLite's one writer connection and its
// immediate transactions serialize the processes sharing the file.
func (s *DB) migrate(ctx context.Context) error {
	migs, err := Migrations(s.Dialect)
	if err != nil {
		return err
	}
	conn, err := s.W.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if s.Dialect == Postgres {
		if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(?)`, migrationLock); err != nil {
			return fmt.Errorf("take the migration lock: %w", err)
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(?)`, migrationLock)
	}
	if err := inTx(ctx, conn, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.Dialect.createMigrations())
		return err
	}); err != nil {
		return err
	}
	for _, m := range migs {
		if err := applyMigration(ctx, conn, m); err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
	}
	return nil
}

func applyMigration(ctx context.Context, conn *sql.Conn, m Migration) error {
	return inTx(ctx, conn, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM migrations WHERE name = ?`, m.Name).Scan(&n); err != nil {
			return err
		} else if n > 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO migrations (name) VALUES (?)`, m.Name)
		return err
	})
}

// inTx runs fn in one transaction on conn. On SQLite every step of a
// migration, the CREATE of the migrations table too, runs in a transaction:
// the DSN's _txlock=immediate takes the write lock at BEGIN, where the busy
// timeout waits for another process. A statement run on its own reads first
// and takes the write lock later, and when another process committed in
// between SQLite answers "database is locked" at once (SQLITE_BUSY_SNAPSHOT).
func inTx(ctx context.Context, conn *sql.Conn, fn func(*sql.Tx) error) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}
