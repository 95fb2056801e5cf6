package sqldb_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/sqldb"
)

// Every statement sent to the store is counted once, whoever sends it: the
// pools, a transaction (its begin and end too), a prepared statement.
func TestStatementsCounted(t *testing.T) {
	ctx := context.Background()
	s, err := sqldb.Open(ctx, dbtest.DatabaseURL(t), filepath.Join(t.TempDir(), "count.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	step := func(what string, want int64, do func() error) {
		t.Helper()
		before := s.Statements()
		if err := do(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := s.Statements() - before; got != want {
			t.Fatalf("%s: %d statements counted, want %d", what, got, want)
		}
	}
	step("create", 1, func() error {
		_, err := s.W.ExecContext(ctx, `CREATE TABLE counted (id INTEGER PRIMARY KEY, name TEXT NOT NULL)`)
		return err
	})
	step("insert", 1, func() error {
		_, err := s.W.ExecContext(ctx, `INSERT INTO counted (id, name) VALUES (?, ?)`, 1, "one")
		return err
	})
	step("query row", 1, func() error {
		var name string
		return s.R.QueryRowContext(ctx, `SELECT name FROM counted WHERE id = ?`, 1).Scan(&name)
	})
	step("query", 1, func() error {
		rows, err := s.R.QueryContext(ctx, `SELECT id FROM counted`)
		if err != nil {
			return err
		}
		for rows.Next() {
		}
		return rows.Close()
	})
	step("transaction", 4, func() error { // begin, insert, select, commit
		return s.Tx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO counted (id, name) VALUES (?, ?)`, 2, "two"); err != nil {
				return err
			}
			var n int
			return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM counted`).Scan(&n)
		})
	})
	step("rolled back", 3, func() error { // begin, insert, rollback
		tx, err := s.W.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO counted (id, name) VALUES (?, ?)`, 3, "three"); err != nil {
			return err
		}
		return tx.Rollback()
	})
	step("prepared, run twice", 2, func() error {
		st, err := s.W.PrepareContext(ctx, `INSERT INTO counted (id, name) VALUES (?, ?)`)
		if err != nil {
			return err
		}
		defer st.Close()
		if _, err := st.ExecContext(ctx, 4, "four"); err != nil {
			return err
		}
		_, err = st.ExecContext(ctx, 5, "five")
		return err
	})
	step("ping", 1, func() error { return s.Ping(ctx) })
}
