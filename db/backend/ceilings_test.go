package backend_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"

	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/sqldb"
)

// Raises of one run released together leave its ceiling at the highest
// asked, each answered a ceiling at least as high as it asked; a lower
// raise leaves it as it is; runs that share a kind, an item or a part with
// another keep ceilings of their own. Runs on the store of the run (SQLite,
// or PostgreSQL when DATABASE_URL is set).
func TestIssueCeilingsNeverFall(t *testing.T) {
	ctx := context.Background()
	b := &backend.Backend{SQL: dbtest.DB(t)}
	runs := []backend.IDRun{
		{Kind: backend.GoodsOrders, Item: 7, Part: 0},
		{Kind: backend.GoodsOrders, Item: 7, Part: 1},
		{Kind: backend.GoodsOrders, Item: 8, Part: 0},
		{Kind: backend.RedPacketShares, Item: 7},
		{Kind: backend.CouponUnits, Item: 7},
	}
	const raises = 200
	asked := func(i, r int) int64 { return int64((r*37+i*11)%raises + 1 + 1000*i) }
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, run := range runs {
		for r := range raises {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				got, err := b.RaiseIssueCeiling(ctx, run, asked(i, r))
				if err != nil {
					t.Errorf("raise %+v to %d: %v", run, asked(i, r), err)
				} else if got < asked(i, r) {
					t.Errorf("raise %+v to %d answered %d", run, asked(i, r), got)
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	for i, run := range runs {
		want := int64(raises + 1000*i)
		if got, err := b.IssueCeiling(ctx, run); err != nil || got != want {
			t.Errorf("%+v: ceiling %d, %v; want %d", run, got, err, want)
		}
		if got, err := b.RaiseIssueCeiling(ctx, run, 1); err != nil || got != want {
			t.Errorf("%+v: lowered to 1: answered %d, %v; want %d kept", run, got, err, want)
		}
	}
	if got, err := b.IssueCeiling(ctx, backend.IDRun{Kind: backend.CouponUnits, Item: 9}); err != nil || got != 0 {
		t.Errorf("a run never raised: ceiling %d, %v; want 0", got, err)
	}
}

// 0023_id_ceilings moves every row of the two tables of ceilings an older
// release kept (goods_seq_blocks per goods bucket, issue_ceilings per red
// packet and coupon) into id_ceilings, each read back through the API with
// its ceiling, and drops the old tables. SQLite always; PostgreSQL when
// DATABASE_URL is set.
func TestIDCeilingsMigration(t *testing.T) {
	const migration = "0023"
	t.Run("sqlite", func(t *testing.T) {
		path, old := dbtest.SQLiteBefore(t, migration)
		testIDCeilingsMigration(t, old, func() (*sqldb.DB, error) { return sqldb.OpenSQLite(path) })
	})
	t.Run("postgres", func(t *testing.T) {
		url, old := dbtest.PostgresBefore(t, migration)
		testIDCeilingsMigration(t, old, func() (*sqldb.DB, error) { return sqldb.OpenPostgres(context.Background(), url) })
	})
}

func testIDCeilingsMigration(t *testing.T, old *sql.DB, open func() (*sqldb.DB, error)) {
	t.Helper()
	for _, q := range []string{
		`INSERT INTO users (id, username, password_hash, role, created_ms) VALUES (1, 'm', '', 'merchant', 0)`,
		`INSERT INTO slots (id, merchant_id, title, start_ms, end_ms, created_ms) VALUES (1, 1, 's', 0, 10, 0)`,
		`INSERT INTO goods (id, slot_id, merchant_id, title, price_cents, seckill_price_cents, stock, limit_per_user, remaining, created_ms)
			VALUES (7, 1, 1, 'g', 2, 1, 3, 1, 0, 0), (8, 1, 1, 'h', 2, 1, 3, 1, 0, 0)`,
		`INSERT INTO goods_seq_blocks (goods_id, bucket, ceiling) VALUES (7, 0, 100000), (7, 3, 30200000), (8, 0, 200000)`,
		`INSERT INTO issue_ceilings (kind, item_id, ceiling) VALUES ('redpacket', 7, 12), ('coupon', 7, 1000), ('coupon', 8, 50)`,
	} {
		if _, err := old.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	old.Close()
	s, err := open()
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	t.Cleanup(func() { s.Close() })

	b := &backend.Backend{SQL: s}
	ctx := context.Background()
	want := map[backend.IDRun]int64{
		{Kind: backend.GoodsOrders, Item: 7, Part: 0}: 100000,
		{Kind: backend.GoodsOrders, Item: 7, Part: 3}: 30200000,
		{Kind: backend.GoodsOrders, Item: 8, Part: 0}: 200000,
		{Kind: backend.RedPacketShares, Item: 7}:      12,
		{Kind: backend.CouponUnits, Item: 7}:          1000,
		{Kind: backend.CouponUnits, Item: 8}:          50,
		{Kind: backend.GoodsOrders, Item: 7, Part: 1}: 0, // never reserved
		{Kind: backend.RedPacketShares, Item: 8}:      0,
	}
	for run, w := range want {
		if got, err := b.IssueCeiling(ctx, run); err != nil || got != w {
			t.Errorf("%+v after the migration: ceiling %d, %v; want %d", run, got, err, w)
		}
	}
	var rows int
	if err := s.R.QueryRow(`SELECT COUNT(*) FROM id_ceilings`).Scan(&rows); err != nil || rows != 6 {
		t.Errorf("id_ceilings holds %d rows (%v), want the 6 of the old tables", rows, err)
	}
	for _, table := range []string{"goods_seq_blocks", "issue_ceilings"} {
		if _, err := s.R.Exec(fmt.Sprintf(`SELECT 1 FROM %s`, table)); err == nil {
			t.Errorf("the migration left %s behind", table)
		}
	}
}
