package sqldb

import (
	"context"
	"database/sql/driver"
	"sync/atomic"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/mattn/go-sqlite3"
)

// Statements is how many SQL statements the process has sent this store
// since it was opened: each Exec and Query (QueryRow is one), in a
// transaction or not, through a prepared statement or not, and each
// transaction's begin and its commit or rollback. They are counted on the
// connections (sqliteConn, pgConn), so no caller of W, R, a *sql.Tx or a
// *sql.Stmt is left out.
func (s *DB) Statements() int64 { return s.statements.Load() }

// sqliteConnector opens SQLite connections, as sql.Open("sqlite3", dsn)
// would, wrapped in sqliteConn.
type sqliteConnector struct {
	dsn string
	n   *atomic.Int64
}

func (c sqliteConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.Driver().Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return &sqliteConn{conn.(*sqlite3.SQLiteConn), c.n}, nil
}

func (c sqliteConnector) Driver() driver.Driver { return &sqlite3.SQLiteDriver{} }

// sqliteConn is a SQLite connection that counts its statements. The
// driver's connection is embedded, so every interface of it database/sql
// looks for is still there.
type sqliteConn struct {
	*sqlite3.SQLiteConn
	n *atomic.Int64
}

func (c *sqliteConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	c.n.Add(1)
	return c.SQLiteConn.ExecContext(ctx, query, args)
}

func (c *sqliteConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	c.n.Add(1)
	return c.SQLiteConn.QueryContext(ctx, query, args)
}

func (c *sqliteConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *sqliteConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.SQLiteConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &sqliteStmt{st.(*sqlite3.SQLiteStmt), c.n}, nil
}

func (c *sqliteConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *sqliteConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return countedBegin(c.n, func() (driver.Tx, error) { return c.SQLiteConn.BeginTx(ctx, opts) })
}

// sqliteStmt is a prepared SQLite statement that counts its runs.
type sqliteStmt struct {
	*sqlite3.SQLiteStmt
	n *atomic.Int64
}

func (s *sqliteStmt) Exec(args []driver.Value) (driver.Result, error) {
	s.n.Add(1)
	return s.SQLiteStmt.Exec(args)
}

func (s *sqliteStmt) Query(args []driver.Value) (driver.Rows, error) {
	s.n.Add(1)
	return s.SQLiteStmt.Query(args)
}

func (s *sqliteStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.n.Add(1)
	return s.SQLiteStmt.ExecContext(ctx, args)
}

func (s *sqliteStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.n.Add(1)
	return s.SQLiteStmt.QueryContext(ctx, args)
}

// pgStmt is a prepared PostgreSQL statement that counts its runs (pgx's runs
// them on its own connection, past pgConn).
type pgStmt struct {
	*stdlib.Stmt
	n *atomic.Int64
}

func (s *pgStmt) Exec(args []driver.Value) (driver.Result, error) {
	s.n.Add(1)
	return s.Stmt.Exec(args)
}

func (s *pgStmt) Query(args []driver.Value) (driver.Rows, error) {
	s.n.Add(1)
	return s.Stmt.Query(args)
}

func (s *pgStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.n.Add(1)
	return s.Stmt.ExecContext(ctx, args)
}

func (s *pgStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.n.Add(1)
	return s.Stmt.QueryContext(ctx, args)
}

// countedBegin counts a transaction's begin and wraps it to count its end.
func countedBegin(n *atomic.Int64, begin func() (driver.Tx, error)) (driver.Tx, error) {
	n.Add(1)
	tx, err := begin()
	if err != nil {
		return nil, err
	}
	return countedTx{tx, n}, nil
}

// countedTx counts the commit or rollback that ends a transaction.
type countedTx struct {
	driver.Tx
	n *atomic.Int64
}

func (t countedTx) Commit() error {
	t.n.Add(1)
	return t.Tx.Commit()
}

func (t countedTx) Rollback() error {
	t.n.Add(1)
	return t.Tx.Rollback()
}
