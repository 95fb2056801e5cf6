package sqldb

import (
	"context"
	"database/sql/driver"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// pgConnector opens pgx's database/sql connections wrapped in pgConn, so
// that every statement of the process, whoever runs it on whichever *sql.DB,
// *sql.Tx or *sql.Stmt, is rebound from ? to $n in this one place, and
// counted (DB.Statements).
type pgConnector struct {
	driver.Connector
	n *atomic.Int64
}

func (c pgConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &pgConn{conn.(*stdlib.Conn), c.n}, nil
}

type stdlibConn = stdlib.Conn

// pgConn is pgx's connection with the statements rebound, and COPY: an
// Exec whose one argument is a *copyRows streams the rows with COPY FROM
// STDIN on this connection, inside the transaction it is in.
type pgConn struct {
	*stdlibConn
	n *atomic.Int64
}

func (c *pgConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *pgConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.stdlibConn.PrepareContext(ctx, Postgres.Rebind(query))
	if err != nil {
		return nil, err
	}
	return &pgStmt{st.(*stdlib.Stmt), c.n}, nil
}

func (c *pgConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *pgConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return countedBegin(c.n, func() (driver.Tx, error) { return c.stdlibConn.BeginTx(ctx, opts) })
}

func (c *pgConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	c.n.Add(1)
	if len(args) == 1 {
		if rows, ok := args[0].Value.(*copyRows); ok {
			if c.Conn().IsClosed() {
				return nil, driver.ErrBadConn
			}
			n, err := c.Conn().CopyFrom(ctx, pgx.Identifier{rows.table}, rows.columns, pgx.CopyFromRows(rows.rows))
			return driver.RowsAffected(n), err
		}
	}
	return c.stdlibConn.ExecContext(ctx, Postgres.Rebind(query), args)
}

func (c *pgConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	c.n.Add(1)
	return c.stdlibConn.QueryContext(ctx, Postgres.Rebind(query), args)
}

// copyRows is what InsertRows hands the connection to COPY into table.
type copyRows struct {
	table   string
	columns []string
	rows    [][]any
}
