package sqldb_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/mattn/go-sqlite3"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/sqldb"
)

// InsertRows writes every row in few statements (COPY on PostgreSQL), and a
// staged batch applies with one set-based statement that skips duplicates
// and with one that updates from it, in either dialect.
func TestInsertRowsAndStage(t *testing.T) {
	ctx := context.Background()
	s := dbtest.DB(t)
	if _, err := s.W.ExecContext(ctx, `CREATE TABLE items (id BIGINT PRIMARY KEY, name TEXT NOT NULL, n BIGINT NOT NULL DEFAULT 0)`); err != nil {
		t.Fatal(err)
	}
	const total = 2500 // more than one multi-row INSERT on SQLite
	rows := make([][]any, total)
	for i := range rows {
		rows[i] = []any{int64(i + 1), fmt.Sprintf("item %d", i+1)}
	}
	err := s.Tx(ctx, func(tx *sql.Tx) error {
		n, err := s.InsertRows(ctx, tx, "items", []string{"id", "name"}, rows)
		if err == nil && n != total {
			err = fmt.Errorf("InsertRows wrote %d rows, want %d", n, total)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := count(t, s, `SELECT COUNT(*) FROM items`); got != total {
		t.Fatalf("%d rows, want %d", got, total)
	}
	// The rows travel inside the caller's transaction: a rollback takes them back.
	rollback := errors.New("rollback")
	err = s.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := s.InsertRows(ctx, tx, "items", []string{"id", "name"}, [][]any{{int64(total + 100), "gone"}}); err != nil {
			return err
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatalf("rolled back insert: %v", err)
	}
	if got := count(t, s, `SELECT COUNT(*) FROM items`); got != total {
		t.Fatalf("%d rows after a rollback, want %d", got, total)
	}

	// A batch half old, half new: the new half is inserted, the old half
	// left alone, and every row of the batch counted once.
	batch := [][]any{}
	for id := int64(total - 9); id <= total+10; id++ {
		batch = append(batch, []any{id, "again", int64(1)})
	}
	cols := []sqldb.Column{{Name: "id", Type: "BIGINT"}, {Name: "name", Type: "TEXT"}, {Name: "n", Type: "BIGINT"}}
	var inserted, updated int64
	for range 2 { // a replayed batch changes nothing more, and stages afresh
		err = s.Tx(ctx, func(tx *sql.Tx) error {
			if err := s.Stage(ctx, tx, "batch", cols, batch); err != nil {
				return err
			}
			res, err := tx.ExecContext(ctx, `INSERT INTO items (id, name) SELECT id, name FROM batch WHERE true ON CONFLICT DO NOTHING`)
			if err != nil {
				return err
			}
			n, _ := res.RowsAffected()
			inserted += n
			res, err = tx.ExecContext(ctx, `UPDATE items SET n = items.n + b.n FROM batch AS b WHERE items.id = b.id AND items.n = 0`)
			if err != nil {
				return err
			}
			n, _ = res.RowsAffected()
			updated += n
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if inserted != 10 || updated != 20 {
		t.Fatalf("inserted %d, updated %d; want 10 and 20", inserted, updated)
	}
	if got := count(t, s, `SELECT COUNT(*) FROM items WHERE name = 'again'`); got != 10 {
		t.Fatalf("%d rows renamed, want the 10 new ones only", got)
	}
	if got := count(t, s, `SELECT COALESCE(SUM(n), 0) FROM items`); got != 20 {
		t.Fatalf("sum of n = %d, want 20", got)
	}
}

// A duplicate is a unique violation in either dialect and not passing; a
// busy database or a lock not granted in time is passing, which
// backend.Unavailable tells the client as unavailable.
func TestErrorClasses(t *testing.T) {
	ctx := context.Background()
	s := dbtest.DB(t)
	insert := `INSERT INTO users (username, password_hash, role, created_ms) VALUES (?, 'x', 'user', 0)`
	if _, err := s.W.ExecContext(ctx, insert, "twin"); err != nil {
		t.Fatal(err)
	}
	err := s.Tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, insert, "TWIN") // usernames are unique in any case
		return err
	})
	if !sqldb.IsUniqueViolation(err) || sqldb.IsPassing(err) || db.ErrorCode(err) != db.EINTERNAL {
		t.Fatalf("duplicate: %v (unique %v, passing %v, code %s)", err, sqldb.IsUniqueViolation(err), sqldb.IsPassing(err), db.ErrorCode(err))
	}
	busy := fmt.Errorf("flush: %w", sqlite3.Error{Code: sqlite3.ErrBusy})
	if !sqldb.IsPassing(busy) || !backend.Unavailable(busy) {
		t.Fatalf("SQLite busy: passing %v, unavailable %v; want both", sqldb.IsPassing(busy), backend.Unavailable(busy))
	}
	if s.Dialect != sqldb.Postgres {
		return
	}
	// Another transaction holds the row past this one's lock timeout.
	holder, err := s.W.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	if _, err := holder.ExecContext(ctx, `UPDATE users SET role = 'merchant' WHERE username = 'twin'`); err != nil {
		t.Fatal(err)
	}
	err = s.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `SET LOCAL lock_timeout = '50ms'`); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE users SET role = 'admin' WHERE username = 'twin'`)
		return err
	})
	if !sqldb.IsPassing(err) || !backend.Unavailable(err) {
		t.Fatalf("lock timeout: %v, want passing and unavailable", err)
	}
}

func count(t *testing.T, s *sqldb.DB, q string) int64 {
	t.Helper()
	var n int64
	if err := s.R.QueryRow(q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}
