package orders_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/goods/goodstest"
	"github.com/seckill/seckill/db/goods/internal/sale"
	"github.com/seckill/seckill/db/model"
)

// A flush killed between moving a batch and committing it, or between
// committing and releasing it, then run again: every order in SQLite exactly once.
func TestOrderFlushCrash(t *testing.T) { testOrderFlushCrash(t, 1) } // its figures are one bucket's (db/goods/shards_test.go has buckets' own)

func testOrderFlushCrash(t *testing.T, k int) {
	e := goodstest.NewK(t, k)
	g := e.LiveGoods(backend.FlushBatchSize+200, 1)
	var ids []int64
	for u := int64(1); u <= backend.FlushBatchSize+200; u++ {
		ids = append(ids, e.Grab(u, g.ID).ID)
	}
	// Crash after the move: the batch sits in processing, uncommitted.
	if n, err := e.S.MoveOrderBatch(e.Ctx, g.ID); err != nil || n != backend.FlushBatchSize {
		t.Fatalf("move: %d %v", n, err)
	}
	if _, err := e.S.PayOrder(e.Ctx, 1, ids[0]); err != nil { // a change queued behind the stuck batch
		t.Fatal(err)
	}
	e.Flush()
	// Crash after the commit: applied, but the batch was never released.
	e.S.CancelOrder(e.Ctx, 2, ids[1])
	if n, err := e.S.MoveOrderBatch(e.Ctx, g.ID); err != nil || n != 1 {
		t.Fatalf("second move: %d %v", n, err)
	}
	if _, err := e.S.ApplyOrderBatch(e.Ctx, g.ID); err != nil {
		t.Fatal(err)
	}
	e.Flush()

	var rows, distinct int
	e.S.SQL.R.QueryRow(`SELECT COUNT(*), COUNT(DISTINCT id) FROM orders WHERE goods_id = ?`, g.ID).Scan(&rows, &distinct)
	if rows != len(ids) || distinct != len(ids) {
		t.Fatalf("SQLite has %d rows (%d distinct), want each of %d orders once", rows, distinct, len(ids))
	}
	for i, want := range map[int]string{0: model.OrderPaid, 1: model.OrderCancelled, 2: model.OrderUnpaid} {
		var status string
		var version int
		e.S.SQL.R.QueryRow(`SELECT status, version FROM orders WHERE id = ?`, ids[i]).Scan(&status, &version)
		if status != want {
			t.Fatalf("order %d: %q (v%d), want %q", ids[i], status, version, want)
		}
	}
	if st := e.Stats(g.ID); st.Pending != 0 {
		t.Fatalf("%d records left in the queue", st.Pending)
	}
}

// The flush's apply under the durable guard, path by path, with batches
// written by hand: several records of one order leave its newest state; of
// two new orders on one unit the first holds it; an order under another's
// ID, a unit sold twice and an ended order brought back onto a held unit are
// kept in order_conflicts with their reason; one brought back onto a free
// unit holds it again; and a batch applied twice changes nothing the second time.
func TestApplyOrdersGuardsEveryPath(t *testing.T) {
	goodstest.EachShards(t, testApplyOrdersGuardsEveryPath)
}

func testApplyOrdersGuardsEveryPath(t *testing.T, k int) {
	e := goodstest.NewK(t, k)
	g := e.LiveGoods(5, 1)
	now := e.Clk.Now().UnixMilli()
	rec := func(seq, user, unit int64, status string, version int64) string {
		return fmt.Sprintf("%d|%d|%d|4999|%s|%d|%d|%d|%d", seq, user, unit, status, now+seq, now+60000, version, now+version)
	}
	apply := func(recs ...string) {
		t.Helper()
		q := sale.Key(g.ID, "processing")
		if err := e.S.Redis.RPush(e.Ctx, q, recs).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := e.S.ApplyOrderBatch(e.Ctx, g.ID); err != nil {
			t.Fatalf("apply: %v", err)
		}
		if err := e.S.Redis.Del(e.Ctx, q).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// state reads every row of the goods: table, user, status, version and reason.
	state := func() map[string]string {
		t.Helper()
		out := map[string]string{}
		for _, q := range []string{
			`SELECT 'orders', id, user_id, status, version, '' FROM orders WHERE goods_id = ?`,
			`SELECT 'conflicts', id, user_id, status, version, reason FROM order_conflicts WHERE goods_id = ?`,
		} {
			rows, err := e.S.SQL.R.Query(q, g.ID)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var table, status, reason string
				var id, user, version int64
				if err := rows.Scan(&table, &id, &user, &status, &version, &reason); err != nil {
					t.Fatal(err)
				}
				_, seq, _ := sale.SplitOrderID(id)
				out[fmt.Sprintf("%s %d", table, seq)] = strings.TrimSpace(fmt.Sprintf("user %d %s v%d %s", user, status, version, reason))
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			rows.Close()
		}
		return out
	}
	check := func(when string, want map[string]string) {
		t.Helper()
		got := state()
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s: %s is %q, want %q", when, k, got[k], w)
			}
		}
		for k, v := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("%s: unexpected %s: %q", when, k, v)
			}
		}
	}

	first := []string{
		rec(1, 1, 5, model.OrderUnpaid, 1), rec(1, 1, 5, model.OrderPaid, 2), // grabbed and paid
		rec(2, 2, 4, model.OrderUnpaid, 1),
		rec(3, 3, 4, model.OrderUnpaid, 1), // unit 4 again: Redis sold it twice
		rec(6, 6, 1, model.OrderCancelled, 2),
		rec(7, 7, 1, model.OrderUnpaid, 1), // unit 1 once more, freed by order 6
		rec(4, 4, 3, model.OrderCancelled, 2),
	}
	afterFirst := map[string]string{
		"orders 1": "user 1 paid v2", "orders 2": "user 2 unpaid v1", "conflicts 3": "user 3 unpaid v1 unit_taken",
		"orders 4": "user 4 cancelled v2", "orders 6": "user 6 cancelled v2", "orders 7": "user 7 unpaid v1",
	}
	apply(first...)
	check("first batch", afterFirst)
	apply(first...)
	check("first batch again", afterFirst)

	second := []string{
		rec(2, 9, 2, model.OrderUnpaid, 1),    // order 2's ID for another order: Redis's sequence went back
		rec(4, 4, 3, model.OrderUnpaid, 3),    // order 4 back on its unit, which nobody holds
		rec(6, 6, 1, model.OrderUnpaid, 3),    // order 6 back on its unit, which order 7 holds
		rec(5, 5, 5, model.OrderUnpaid, 1),    // unit 5, which order 1 holds
		rec(3, 3, 4, model.OrderCancelled, 2), // the refused order 3 ends
	}
	afterSecond := map[string]string{
		"orders 1": "user 1 paid v2", "orders 2": "user 2 unpaid v1", "conflicts 2": "user 9 unpaid v1 id_taken",
		"conflicts 3": "user 3 cancelled v2 unit_taken", "orders 4": "user 4 unpaid v3",
		"conflicts 5": "user 5 unpaid v1 unit_taken",
		"orders 6":    "user 6 cancelled v2", "conflicts 6": "user 6 unpaid v3 unit_taken", "orders 7": "user 7 unpaid v1",
	}
	apply(append(first, second...)...)
	check("second batch", afterSecond)
	apply(second...)
	check("second batch again", afterSecond)
}
