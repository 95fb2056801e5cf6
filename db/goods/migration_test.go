package goods_test

import (
	"testing"

	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/sqldb"
)

// 0010_order_failure reopens the paid duplicates a release before it marked
// handled and left paid, so the flush fails them and tells their owners;
// every other conflict stays as it was, and orders gain an empty failure.
func TestMigrationReopensPaidConflicts(t *testing.T) {
	path, old := dbtest.SQLiteBefore(t, "0010")
	for _, q := range []string{
		`INSERT INTO users (id, username, password_hash, role, created_ms) VALUES (1, 'm', '', 'merchant', 0)`,
		`INSERT INTO slots (id, merchant_id, title, start_ms, end_ms, created_ms) VALUES (1, 1, 's', 0, 10, 0)`,
		`INSERT INTO goods (id, slot_id, merchant_id, title, price_cents, seckill_price_cents, stock, limit_per_user, remaining, created_ms)
			VALUES (1, 1, 1, 'g', 2, 1, 3, 1, 0, 0)`,
		`INSERT INTO orders (id, goods_id, user_id, unit, amount_cents, status, created_ms, expires_ms, updated_ms, version)
			VALUES (1000000001, 1, 5, 1, 1, 'paid', 0, 1, 0, 2)`,
	} {
		if _, err := old.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	conflict := `INSERT INTO order_conflicts (id, goods_id, user_id, unit, amount_cents, status, created_ms, expires_ms, updated_ms,
		version, reason, detected_ms, handled) VALUES (?, 1, ?, 1, 1, ?, 0, 1, 0, 2, 'unit_taken', 0, ?)`
	for _, c := range []struct {
		id      int64
		status  string
		handled int
	}{{1000000004, "paid", 1}, {1000000005, "failed", 1}, {1000000006, "cancelled", 1}, {1000000007, "unpaid", 0}} {
		if _, err := old.Exec(conflict, c.id, c.id%10, c.status, c.handled); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()

	sq, err := sqldb.OpenSQLite(path)
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	t.Cleanup(func() { sq.Close() })
	for id, want := range map[int64]bool{1000000004: false, 1000000005: true, 1000000006: true, 1000000007: false} {
		var handled bool
		var failure string
		if err := sq.R.QueryRow(`SELECT handled, failure FROM order_conflicts WHERE id = ?`, id).Scan(&handled, &failure); err != nil {
			t.Fatal(err)
		}
		if handled != want || failure != "" {
			t.Errorf("conflict %d: handled %v failure %q, want handled %v and no failure", id, handled, failure, want)
		}
	}
	var failure string
	if err := sq.R.QueryRow(`SELECT failure FROM orders WHERE id = 1000000001`).Scan(&failure); err != nil || failure != "" {
		t.Errorf("an order's failure after the migration: %q %v", failure, err)
	}
}
