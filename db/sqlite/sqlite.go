package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	_ "github.com/mattn/go-sqlite3" // registers the "sqlite3" driver
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// SQLite is the durable store: one writer connection (so writes queue in Go
// instead of failing with "database is locked") and a pool of readers.
type DB struct {
	Path string
	W    *sql.DB // the single writer
	R    *sql.DB // readers, WAL lets them run beside the writer
}

// Open opens (creating when missing) the database at path and applies pending migrations.
func Open(path string) (*DB, error) {
	if path == "" {
		return nil, fmt.Errorf("database path required")
	}
	if path != ":memory:" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("create database folder: %w", err)
		}
	}
	dsn := "file:" + path + "?_journal_mode=WAL&_foreign_keys=on&_busy_timeout=10000&_synchronous=NORMAL&_txlock=immediate"
	w, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	r, err := sql.Open("sqlite3", dsn+"&mode=ro")
	if err != nil {
		w.Close()
		return nil, err
	}
	r.SetMaxOpenConns(8)
	s := &DB{Path: path, W: w, R: r}
	if err := s.migrate(context.Background()); err != nil {
		s.Close()
		return nil, fmt.Errorf("migrate %s: %w", path, err)
	}
	return s, nil
}

// Close closes both connection pools.
func (s *DB) Close() error {
	err1 := s.R.Close()
	err2 := s.W.Close()
	if err1 != nil {
		return err1
	}
	return err2
}

// Ping checks that the database answers a query.
func (s *DB) Ping(ctx context.Context) error {
	var one int
	return s.R.QueryRowContext(ctx, `SELECT 1`).Scan(&one)
}

// Tx runs fn in one write transaction, committed when fn returns nil.
func (s *DB) Tx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.W.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// migrate applies every embedded migration not yet recorded, in name order, each in its own transaction.
func (s *DB) migrate(ctx context.Context) error {
	if _, err := s.W.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')))`); err != nil {
		return err
	}
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		if err := s.Tx(ctx, func(tx *sql.Tx) error { return applyMigration(ctx, tx, name) }); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

func applyMigration(ctx context.Context, tx *sql.Tx, name string) error {
	base := strings.TrimPrefix(name, "migrations/")
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM migrations WHERE name = ?`, base).Scan(&n); err != nil {
		return err
	} else if n > 0 {
		return nil
	}
	buf, err := migrationFS.ReadFile(name)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, string(buf)); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO migrations (name) VALUES (?)`, base)
	return err
}
