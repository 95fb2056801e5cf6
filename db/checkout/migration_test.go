package checkout_test

import (
	"testing"

	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/sqldb"
)

// 0011_checkout rebuilds SQLite's orders to allow 'refunded': every order
// keeps its row and indexes, a paid one (or one owed a refund) gains its
// amount as paid at its last update, and refunded becomes a status it takes.
func TestCheckoutMigration(t *testing.T) {
	path, old := dbtest.SQLiteBefore(t, "0011")
	for _, q := range []string{
		`INSERT INTO users (id, username, password_hash, role, created_ms) VALUES (1, 'm', '', 'merchant', 0)`,
		`INSERT INTO slots (id, merchant_id, title, start_ms, end_ms, created_ms) VALUES (1, 1, 's', 0, 10, 0)`,
		`INSERT INTO goods (id, slot_id, merchant_id, title, price_cents, seckill_price_cents, stock, limit_per_user, remaining, created_ms)
			VALUES (1, 1, 1, 'g', 2, 1, 3, 1, 0, 0)`,
		`INSERT INTO orders (id, goods_id, user_id, unit, amount_cents, status, created_ms, expires_ms, updated_ms, version)
			VALUES (1000000001, 1, 5, 1, 700, 'paid', 0, 1, 42, 2)`,
		`INSERT INTO orders (id, goods_id, user_id, unit, amount_cents, status, created_ms, expires_ms, updated_ms, version)
			VALUES (1000000002, 1, 6, 2, 700, 'expired', 0, 1, 43, 2)`,
	} {
		if _, err := old.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()
	sq, err := sqldb.OpenSQLite(path)
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	t.Cleanup(func() { sq.Close() })
	for id, want := range map[int64][2]int64{1000000001: {700, 42}, 1000000002: {0, 0}} {
		var paid, at int64
		if err := sq.R.QueryRow(`SELECT paid_cents, paid_at_ms FROM orders WHERE id = ?`, id).Scan(&paid, &at); err != nil {
			t.Fatal(err)
		}
		if paid != want[0] || at != want[1] {
			t.Errorf("order %d: paid %d at %d, want %v", id, paid, at, want)
		}
	}
	if _, err := sq.W.Exec(`UPDATE orders SET status = 'refunded' WHERE id = 1000000001`); err != nil {
		t.Fatalf("refunded refused: %v", err)
	}
	if _, err := sq.W.Exec(`UPDATE orders SET status = 'bogus' WHERE id = 1000000001`); err == nil {
		t.Fatal("the status check was lost in the rebuild")
	}
	// The live unit index came back: a second live order of unit 2 is refused while one holds it.
	sq.W.Exec(`UPDATE orders SET status = 'paid' WHERE id = 1000000002`)
	if _, err := sq.W.Exec(`INSERT INTO orders (id, goods_id, user_id, unit, amount_cents, status, created_ms, expires_ms, updated_ms, version)
		VALUES (1000000003, 1, 7, 2, 700, 'unpaid', 0, 1, 0, 1)`); err == nil {
		t.Fatal("the live unit index was lost in the rebuild")
	}
}
