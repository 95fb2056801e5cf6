// Package sqldb is the durable store: SQLite (the embedded default) or
// PostgreSQL (DATABASE_URL), opened, migrated and run through database/sql.
// Every difference between the two lives in this package (dialect.go,
// postgres.go): queries are written once, with SQLite's ? placeholders and
// SQL both accept, and run unchanged on either.
package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/mattn/go-sqlite3" // registers the "sqlite3" driver
)

// DB is the durable store. On SQLite, W is one writer connection (so writes
// queue in Go instead of failing with "database is locked") and R a pool of
// readers; on PostgreSQL both are the same pool, since the server takes
// concurrent writers.
type DB struct {
	Dialect Dialect
	Path    string  // the SQLite file; "" on PostgreSQL
	W       *sql.DB // writes and transactions
	R       *sql.DB // reads that need no transaction

	where      string        // for String: the file, or the server and database
	statements *atomic.Int64 // SQL statements sent (Statements), on W and R alike
}

// Open opens the durable store and applies pending migrations: PostgreSQL at
// databaseURL when it is set, else SQLite at path.
func Open(ctx context.Context, databaseURL, path string) (*DB, error) {
	if databaseURL != "" {
		return OpenPostgres(ctx, databaseURL)
	}
	return OpenSQLite(path)
}

// OpenSQLite opens (creating when missing) the SQLite database at path and applies pending migrations.
func OpenSQLite(path string) (*DB, error) {
	if path == "" {
		return nil, fmt.Errorf("database path required")
	}
	if path != ":memory:" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("create database folder: %w", err)
		}
	}
	dsn := "file:" + path + "?_foreign_keys=on&_busy_timeout=" + fmt.Sprint(sqliteBusyTimeout.Milliseconds()) + "&_synchronous=NORMAL&_txlock=immediate"
	n := new(atomic.Int64)
	w := sql.OpenDB(sqliteConnector{dsn, n})
	w.SetMaxOpenConns(1)
	if err := walMode(w); err != nil {
		w.Close()
		return nil, fmt.Errorf("WAL mode for %s: %w", path, err)
	}
	r := sql.OpenDB(sqliteConnector{dsn + "&mode=ro", n})
	r.SetMaxOpenConns(8)
	s := &DB{Dialect: SQLite, Path: path, W: w, R: r, where: "SQLite " + path, statements: n}
	if err := s.migrate(context.Background()); err != nil {
		s.Close()
		return nil, fmt.Errorf("migrate %s: %w", path, err)
	}
	return s, nil
}

// sqliteBusyTimeout is how long a SQLite connection waits for another
// process's write lock before it answers "database is locked".
const sqliteBusyTimeout = 10 * time.Second

// walMode turns the file to write-ahead logging, which lasts in the file.
// It is not a DSN option (_journal_mode) because the switch takes an
// exclusive lock without SQLite's busy wait: processes opening one new file
// at once then fail to connect at all ("database is locked"). Here the switch
// is tried again until it takes, for as long as a busy wait would last; on a
// file already in WAL mode it takes at once.
func walMode(w *sql.DB) error {
	deadline := time.Now().Add(sqliteBusyTimeout)
	for {
		var mode string
		err := w.QueryRow(`PRAGMA journal_mode = WAL`).Scan(&mode)
		var se sqlite3.Error
		if errors.As(err, &se) && se.Code == sqlite3.ErrBusy && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if err == nil && !strings.EqualFold(mode, "wal") {
			err = fmt.Errorf("journal mode is %q", mode)
		}
		return err
	}
}

// PostgresPoolSize is how many connections one process keeps to PostgreSQL.
const PostgresPoolSize = 16

// OpenPostgres connects to the PostgreSQL database at url (postgres://…)
// and applies pending migrations.
func OpenPostgres(ctx context.Context, url string) (*DB, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	n := new(atomic.Int64)
	pool := sql.OpenDB(pgConnector{stdlib.GetConnector(*cfg), n})
	pool.SetMaxOpenConns(PostgresPoolSize)
	pool.SetMaxIdleConns(PostgresPoolSize)
	pool.SetConnMaxIdleTime(5 * time.Minute)
	s := &DB{Dialect: Postgres, W: pool, R: pool, where: fmt.Sprintf("PostgreSQL %s:%d/%s", cfg.Host, cfg.Port, cfg.Database), statements: n}
	if err := s.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to %s: %w", s, err)
	}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("migrate %s: %w", s, err)
	}
	return s, nil
}

// String names the store without secrets: "SQLite data/seckill.db" or "PostgreSQL host:5432/seckill".
func (s *DB) String() string { return s.where }

// Close closes the connection pools.
func (s *DB) Close() error {
	if s.R == s.W {
		return s.W.Close()
	}
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

// Tx runs fn in one write transaction, committed when fn returns nil. On
// SQLite the transactions of a process run one after another (one writer,
// BEGIN IMMEDIATE); on PostgreSQL they run side by side at READ COMMITTED,
// so a read-then-write must be guarded by the write itself (a unique index,
// a WHERE on the row's state, ON CONFLICT). A failure the database calls
// passing (SQLite busy, a PostgreSQL serialization failure, deadlock or lock
// timeout: IsPassing) comes back as the driver said it, and the client is
// told 503 unavailable (backend.Unavailable decides); fn runs once.
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

// TxQuiet is Tx in a transaction that the database ends by itself once its
// client has been quiet inside it for longer than limit (PostgreSQL's
// idle_in_transaction_session_timeout, set for this transaction alone): a
// client paused mid-transaction (a stopped process, a long GC) then holds no
// row lock its successor needs for longer than limit, and finds its
// transaction gone when it wakes. SQLite is one host's file and has no such
// limit: TxQuiet is Tx there.
func (s *DB) TxQuiet(ctx context.Context, limit time.Duration, fn func(tx *sql.Tx) error) error {
	if s.Dialect != Postgres {
		return s.Tx(ctx, fn)
	}
	return s.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`SET LOCAL idle_in_transaction_session_timeout = %d`, max(limit.Milliseconds(), 1))); err != nil {
			return err
		}
		return fn(tx)
	})
}

// placeholders is "?, ?, ?" for n values.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}
