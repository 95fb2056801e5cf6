package goods_test

import (
	"slices"
	"testing"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/goods/internal/orders"
	"github.com/seckill/seckill/db/goods/internal/sale"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/rdb"
)

// staleSale is goods of stock 3 sold out to users 1, 2 and 3 (units 3, 2,
// 1; user 1's order paid) and flushed, after which Redis's stock counter
// came back from a snapshot taken before user 3's grab, as a Redis restored
// from an old snapshot brings it: unit 1 is on sale a second time.
type staleSale struct {
	g      *model.Goods
	orders []*model.Order // users 1, 2, 3
}

func (e *goodsEnv) staleSale() staleSale {
	e.T.Helper()
	g := e.LiveGoods(3, 1)
	o1, o2 := e.Grab(1, g.ID), e.Grab(2, g.ID)
	if _, err := e.S.PayOrder(e.Ctx, 1, o1.ID); err != nil {
		e.T.Fatal(err)
	}
	snapshot, err := e.S.Redis.Get(e.Ctx, sale.Key(g.ID, "fresh")).Result()
	if err != nil {
		e.T.Fatal(err)
	}
	o3 := e.Grab(3, g.ID)
	e.Flush()
	if err := e.S.Redis.Set(e.Ctx, sale.Key(g.ID, "fresh"), snapshot, 0).Err(); err != nil { // the restore
		e.T.Fatal(err)
	}
	return staleSale{g: g, orders: []*model.Order{o1, o2, o3}}
}

// liveUnits maps every live (unpaid or paid) order of the goods, in SQLite or
// in Redis, to the unit it holds: what the goods has sold.
func (e *goodsEnv) liveUnits(goodsID int64) map[int64]int64 {
	e.T.Helper()
	out := map[int64]int64{}
	rows, err := e.S.SQL.R.Query(`SELECT id, unit FROM orders WHERE goods_id = ? AND status IN ('unpaid', 'paid')`, goodsID)
	if err != nil {
		e.T.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, unit int64
		if err := rows.Scan(&id, &unit); err != nil {
			e.T.Fatal(err)
		}
		out[id] = unit
	}
	if err := rows.Err(); err != nil {
		e.T.Fatal(err)
	}
	recs, err := e.S.Redis.HGetAll(e.Ctx, sale.Key(goodsID, "orders")).Result()
	if err != nil {
		e.T.Fatal(err)
	}
	for seq, rec := range recs {
		o, err := sale.ParseOrderRecord(goodsID, rec)
		if err != nil {
			e.T.Fatalf("order %s: %v", seq, err)
		}
		if o.Status == model.OrderUnpaid || o.Status == model.OrderPaid {
			out[o.ID] = o.Unit
		}
	}
	return out
}

// Redis restored from an old snapshot sells unit 1 of stock 3 a second
// time, to user 4, who may pay before the flush. The durable guard refuses
// the duplicate; whether it was paid or not it ends failed in Redis and in
// SQLite with a reason its owner can read, the owner is told live, no more
// than 3 orders hold a unit, and the two sides' figures agree.
func TestStaleRestoreDuplicateFails(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pay     bool
		failure string
	}{
		{"paid before the flush", true, model.FailureRefundDue},
		{"unpaid", false, model.FailureSoldTwice},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newGoodsEnv(t)
			sale := e.staleSale()
			g := sale.g
			events := e.WatchUser(4)
			dup := e.Grab(4, g.ID)
			if dup.Unit != sale.orders[2].Unit {
				t.Fatalf("the restore did not sell unit %d again: the duplicate took unit %d", sale.orders[2].Unit, dup.Unit)
			}
			if tc.pay {
				if _, err := e.S.PayOrder(e.Ctx, 4, dup.ID); err != nil {
					t.Fatal(err)
				}
			}
			if n := len(e.liveUnits(g.ID)); n != 4 {
				t.Fatalf("before the flush %d orders hold a unit, want the 4 the stale Redis sold", n)
			}
			e.Flush()

			// Stock conserved: at most 3 orders hold a unit, each a different one.
			live := e.liveUnits(g.ID)
			units := map[int64]bool{}
			for _, u := range live {
				units[u] = true
			}
			if len(live) > 3 || len(units) != len(live) {
				t.Fatalf("after the flush orders hold units %v: more than the stock of 3, or a unit twice", live)
			}
			if _, ok := live[dup.ID]; ok {
				t.Fatalf("the duplicate %d still holds unit %d", dup.ID, dup.Unit)
			}
			// The duplicate failed, in Redis and in SQLite, with the reason.
			got, err := e.S.Order(e.Ctx, 4, dup.ID)
			if err != nil || got.Status != model.OrderFailed || got.Failure != tc.failure {
				t.Fatalf("the duplicate reads %+v, %v; want failed with %q", got, err, tc.failure)
			}
			var status, failure string
			if err := e.S.SQL.R.QueryRow(`SELECT status, failure FROM order_conflicts WHERE id = ?`, dup.ID).Scan(&status, &failure); err != nil ||
				status != model.OrderFailed || failure != tc.failure {
				t.Fatalf("SQLite holds the duplicate as %q %q (%v), want failed %q", status, failure, err, tc.failure)
			}
			if list, err := e.S.Conflicts(e.Ctx, e.Merchant, g.ID); err != nil || len(list) != 1 || list[0].ID != dup.ID ||
				list[0].Failure != tc.failure || !list[0].Handled {
				t.Fatalf("the merchant's list of refused orders: %+v %v", list, err)
			}
			mine, err := e.S.MyOrders(e.Ctx, 4)
			if err != nil || len(mine) != 1 || mine[0].ID != dup.ID || mine[0].Status != model.OrderFailed || mine[0].Failure != tc.failure {
				t.Fatalf("user 4's orders: %+v %v", mine, err)
			}
			// The owner was told, never silently.
			events.WaitOrder(t, dup.ID, func(o *model.Order) bool { return o.Status == model.OrderFailed && o.Failure == tc.failure })
			_, err = e.S.PayOrder(e.Ctx, 4, dup.ID)
			wantCode(t, "paying the failed duplicate", err, db.EEXPIRED)
			// The orders that came first are untouched.
			for i, want := range []string{model.OrderPaid, model.OrderUnpaid, model.OrderUnpaid} {
				if o, err := e.S.Order(e.Ctx, int64(i+1), sale.orders[i].ID); err != nil || o.Status != want {
					t.Fatalf("user %d's order: %+v %v, want %s", i+1, o, err, want)
				}
			}
			// The limit mark is gone; the stock is not.
			_, err = e.S.Grab(e.Ctx, 4, g.ID)
			wantCode(t, "user 4 grabs again", err, db.ESOLDOUT)

			// The figures balance and the two sides agree; only the refusal shows.
			if err := e.S.SyncStock(e.Ctx, 0); err != nil {
				t.Fatal(err)
			}
			e.CheckBalance(g.ID, "after the duplicate failed")
			st := e.Stats(g.ID)
			if st.Remaining != 0 || st.Unpaid != 2 || st.Paid != 1 || st.Failed != 1 || st.RevenueCents != 4999 {
				t.Fatalf("Redis figures: %+v; want 0 remaining, 2 unpaid, 1 paid, 1 failed, revenue 4999", st)
			}
			if st.DB.Unpaid != 2 || st.DB.Paid != 1 || st.DB.Failed != 1 || st.DB.RevenueCents != 4999 || st.DB.Conflicts != 1 {
				t.Fatalf("SQLite figures: %+v", st.DB)
			}
			if !slices.Equal(st.Drift, []string{"conflicts"}) {
				t.Fatalf("drift %v, want only the refusal (conflicts)", st.Drift)
			}
		})
	}
}

// A paid duplicate the durable guard refused that Redis no longer holds
// (Redis lost it, or it is one a release before 0010 left paid, which the
// migration reopens): the next flush fails it in SQLite and tells its owner.
func TestPaidConflictOutsideRedisFails(t *testing.T) {
	eachShards(t, testPaidConflictOutsideRedisFails)
}

func testPaidConflictOutsideRedisFails(t *testing.T, k int) {
	e := newGoodsEnvK(t, k)
	g := e.LiveGoods(3, 1)
	id := sale.OrderID(g.ID, 7)
	now := e.Clk.Now().UnixMilli()
	if _, err := e.S.SQL.W.Exec(`INSERT INTO order_conflicts (id, goods_id, user_id, unit, amount_cents, status, created_ms, expires_ms,
		updated_ms, version, reason, detected_ms, handled) VALUES (?, ?, 9, 1, 4999, 'paid', ?, ?, ?, 2, ?, ?, 0)`,
		id, g.ID, now, now+1, now, orders.ConflictUnitTaken, now); err != nil {
		t.Fatal(err)
	}
	events := e.WatchUser(9)
	e.Flush()
	var status, failure string
	var handled bool
	e.S.SQL.R.QueryRow(`SELECT status, failure, handled FROM order_conflicts WHERE id = ?`, id).Scan(&status, &failure, &handled)
	if status != model.OrderFailed || failure != model.FailureRefundDue || !handled {
		t.Fatalf("the conflict row is %q %q handled=%v, want failed, refund_due, handled", status, failure, handled)
	}
	events.WaitOrder(t, id, func(o *model.Order) bool { return o.Status == model.OrderFailed && o.Failure == model.FailureRefundDue })
	if o, err := e.S.Order(e.Ctx, 9, id); err != nil || o.Status != model.OrderFailed || o.Failure != model.FailureRefundDue {
		t.Fatalf("its owner reads %+v, %v", o, err)
	}
	_, err := e.S.Order(e.Ctx, 8, id)
	wantCode(t, "another user reads it", err, db.ENOTFOUND)
}

// The reconciliation counts failed orders (and revenue) on both sides: a
// goods whose duplicate failed shows no figure drift while the two sides
// agree, and the drift as soon as SQLite's record of it differs.
func TestStatsDriftCountsFailedOrders(t *testing.T) { testStatsDriftCountsFailedOrders(t, 1) } // its figures are one bucket's (shards_test.go has buckets' own)

func testStatsDriftCountsFailedOrders(t *testing.T, k int) {
	e := newGoodsEnvK(t, k)
	sale := e.staleSale()
	g := sale.g
	e.Grab(4, g.ID) // the duplicate, left unpaid: voided as failed
	e.Flush()
	if err := e.S.SyncStock(e.Ctx, 0); err != nil {
		t.Fatal(err)
	}
	st := e.Stats(g.ID)
	if st.Failed != 1 || st.DB.Failed != 1 || !slices.Equal(st.Drift, []string{"conflicts"}) {
		t.Fatalf("consistent: failed %d / db %d, drift %v; want 1, 1 and only conflicts", st.Failed, st.DB.Failed, st.Drift)
	}
	for _, tc := range []struct {
		name, tamper, undo string
		want               []string
	}{
		{"the failed order recorded as cancelled",
			`UPDATE order_conflicts SET status = 'cancelled' WHERE goods_id = ? AND status = 'failed'`,
			`UPDATE order_conflicts SET status = 'failed' WHERE goods_id = ? AND status = 'cancelled'`,
			[]string{"cancelled", "failed", "conflicts"}},
		{"the failed order lost",
			`UPDATE order_conflicts SET goods_id = -goods_id WHERE goods_id = ?`,
			`UPDATE order_conflicts SET goods_id = -goods_id WHERE goods_id = -CAST(? AS BIGINT)`,
			[]string{"failed"}},
		{"a payment's amount changed",
			`UPDATE orders SET amount_cents = amount_cents + 1 WHERE goods_id = ? AND status = 'paid'`,
			`UPDATE orders SET amount_cents = amount_cents - 1 WHERE goods_id = ? AND status = 'paid'`,
			[]string{"revenue", "conflicts"}},
	} {
		if _, err := e.S.SQL.W.Exec(tc.tamper, g.ID); err != nil {
			t.Fatal(err)
		}
		if got := e.Stats(g.ID).Drift; !slices.Equal(got, tc.want) {
			t.Errorf("%s: drift %v, want %v", tc.name, got, tc.want)
		}
		if _, err := e.S.SQL.W.Exec(tc.undo, g.ID); err != nil {
			t.Fatal(err)
		}
		if got := e.Stats(g.ID).Drift; !slices.Equal(got, []string{"conflicts"}) {
			t.Fatalf("%s undone: drift %v", tc.name, got)
		}
	}
	// Redis loses the goods and rebuilds it from SQLite: its counts take the failed order in too.
	if err := rdb.FlushDB(e.Ctx, e.S.Redis); err != nil {
		t.Fatal(err)
	}
	if _, err := e.S.Preheat(e.Ctx); err != nil {
		t.Fatal(err)
	}
	if st := e.Stats(g.ID); st.Failed != 1 || !slices.Equal(st.Drift, []string{"conflicts"}) {
		t.Fatalf("rebuilt: failed %d, drift %v; want 1 and only conflicts", st.Failed, st.Drift)
	}
	e.CheckBalance(g.ID, "rebuilt")
}
