package goods_test

import (
	"slices"
	"testing"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/goods/internal/orders"
	"github.com/seckill/seckill/db/goods/internal/sale"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/rdb"
)

// Preheat loads goods once: a second run never resets the stock, and goods
// created inside the window are loaded at once.
func TestPreheatIdempotent(t *testing.T) { eachShards(t, testPreheatIdempotent) }

func testPreheatIdempotent(t *testing.T, k int) {
	e := newGoodsEnvK(t, k)
	far := e.Goods(e.Slot(time.Hour, time.Hour), 10, 1)
	if n, err := e.S.Preheat(e.Ctx); err != nil || n != 0 {
		t.Fatalf("preheat an hour early loaded %d (%v), want 0", n, err)
	}
	if e.Stats(far.ID).Loaded {
		t.Fatal("goods an hour away is loaded")
	}
	near := e.Goods(e.Slot(sale.PreheatWindow/2, time.Hour), 10, 1)
	if !e.Stats(near.ID).Loaded {
		t.Fatal("goods created inside the preheat window is not loaded at once")
	}
	e.Clk.Advance(time.Hour - sale.PreheatWindow)
	if n, err := e.S.Preheat(e.Ctx); err != nil || n != 1 {
		t.Fatalf("preheat in the window loaded %d (%v), want 1", n, err)
	}
	e.Clk.Advance(sale.PreheatWindow)
	for u := int64(1); u <= 3; u++ {
		e.Grab(u, far.ID)
	}
	for i := 0; i < 2; i++ {
		if n, err := e.S.Preheat(e.Ctx); err != nil || n != 0 {
			t.Fatalf("preheat again loaded %d (%v), want 0", n, err)
		}
	}
	if left := e.Remaining(far.ID); left != 7 {
		t.Fatalf("remaining after preheating again: %d, want 7", left)
	}
	active, _ := e.S.ActiveGoods(e.Ctx)
	if !slices.Contains(active, far.ID) || !slices.Contains(active, near.ID) {
		t.Fatalf("active goods %v, want both", active)
	}
}

// Redis restored from an old snapshot: its stock counter is back up after
// units were sold. The durable guard refuses the extra live orders, the
// flush goes on, the refused orders are voided, and the stats show the drift.
func TestOldSnapshotDurableGuard(t *testing.T) { eachShards(t, testOldSnapshotDurableGuard) }

func testOldSnapshotDurableGuard(t *testing.T, k int) {
	e := newGoodsEnvK(t, k)
	g := e.LiveGoods(10, 1)
	for u := int64(1); u <= 5; u++ {
		e.Grab(u, g.ID) // units 10..6
	}
	e.Flush()
	// The "restore": the counter goes back to where it was before units 8..6 were sold.
	if err := e.S.Redis.IncrBy(e.Ctx, sale.Key(g.ID, "fresh"), 3).Err(); err != nil {
		t.Fatal(err)
	}
	var extra []*model.Order
	for u := int64(6); u <= 13; u++ {
		extra = append(extra, e.Grab(u, g.ID)) // units 8,7,6 (taken already), then 5..1
	}
	if _, err := e.S.Grab(e.Ctx, 99, g.ID); db.ErrorCode(err) != db.ESOLDOUT {
		t.Fatalf("grab after everything: %v, want sold out", err)
	}
	before := e.Stats(g.ID)
	if before.Unpaid != 13 {
		t.Fatalf("Redis believes %d unpaid, want 13", before.Unpaid)
	}
	e.Flush()

	var live, conflicts int
	e.S.SQL.R.QueryRow(`SELECT COUNT(*) FROM orders WHERE goods_id = ? AND status IN ('unpaid','paid')`, g.ID).Scan(&live)
	e.S.SQL.R.QueryRow(`SELECT COUNT(*) FROM order_conflicts WHERE goods_id = ? AND reason = ?`, g.ID, orders.ConflictUnitTaken).Scan(&conflicts)
	if live != 10 || conflicts != 3 {
		t.Fatalf("SQLite: %d live orders and %d conflicts, want 10 and 3", live, conflicts)
	}
	st := e.Stats(g.ID)
	if st.DB.Conflicts != 3 || !slices.Contains(st.Drift, "conflicts") || st.DB.Unpaid != 10 {
		t.Fatalf("stats do not show the drift: %+v", st)
	}
	// The refused orders were voided in Redis: failed, unit not returned, user free to try again.
	for _, o := range extra[:3] {
		got, err := e.S.Order(e.Ctx, o.UserID, o.ID)
		if err != nil || got.Status != model.OrderFailed {
			t.Fatalf("refused order %d: %+v %v, want failed", o.ID, got, err)
		}
		if _, err := e.S.PayOrder(e.Ctx, o.UserID, o.ID); db.ErrorCode(err) != db.EEXPIRED {
			t.Fatalf("paying a refused order: %v, want expired", err)
		}
	}
	if st.Unpaid != 10 || st.Failed != 3 || st.Remaining != 0 {
		t.Fatalf("Redis after voiding: %+v", st)
	}
	e.CheckBalance(g.ID, "after voiding")
	e.Flush() // the void records reach the conflict rows, and nothing else changes
	var failed int
	e.S.SQL.R.QueryRow(`SELECT COUNT(*) FROM order_conflicts WHERE goods_id = ? AND status = 'failed' AND handled = 1`, g.ID).Scan(&failed)
	if failed != 3 {
		t.Fatalf("%d conflict rows failed and handled, want 3", failed)
	}
	list, err := e.S.Conflicts(e.Ctx, e.Merchant, g.ID)
	if err != nil || len(list) != 3 {
		t.Fatalf("conflict list: %+v %v", list, err)
	}
}

// The expiry tick expires unpaid orders at their deadline, never before, and
// leaves paid ones.
func TestExpireDue(t *testing.T) { eachShards(t, testExpireDue) }

func testExpireDue(t *testing.T, k int) {
	e := newGoodsEnvK(t, k)
	g := e.LiveGoods(5, 1)
	o := e.Grab(1, g.ID)
	paid := e.Grab(2, g.ID)
	e.S.PayOrder(e.Ctx, 2, paid.ID)
	if n, err := e.S.ExpireDue(e.Ctx); err != nil || n != 0 {
		t.Fatalf("tick before the deadline expired %d (%v)", n, err)
	}
	e.Clk.Advance(e.S.OrderTTL)
	if n, err := e.S.ExpireDue(e.Ctx); err != nil || n != 1 {
		t.Fatalf("tick after the deadline expired %d (%v), want 1", n, err)
	}
	if got, _ := e.S.Order(e.Ctx, 1, o.ID); got.Status != model.OrderExpired {
		t.Fatalf("expired order is %q", got.Status)
	}
	if got, _ := e.S.Order(e.Ctx, 2, paid.ID); got.Status != model.OrderPaid {
		t.Fatalf("paid order is %q", got.Status)
	}
	if left := e.Remaining(g.ID); left != 4 {
		t.Fatalf("remaining %d, want 4", left)
	}
}

// The stock sync writes Redis's stock to SQLite and retires goods once their
// slot is over and every order is settled and flushed; reads then come from SQLite.
func TestStockSyncAndRetire(t *testing.T) { eachShards(t, testStockSyncAndRetire) }

func testStockSyncAndRetire(t *testing.T, k int) {
	e := newGoodsEnvK(t, k)
	g := e.LiveGoods(5, 1)
	a, b := e.Grab(1, g.ID), e.Grab(2, g.ID)
	e.S.PayOrder(e.Ctx, 1, a.ID)
	if err := e.S.SyncStock(e.Ctx, g.SlotID); err != nil {
		t.Fatal(err)
	}
	var remaining int64
	e.S.SQL.R.QueryRow(`SELECT remaining FROM goods WHERE id = ?`, g.ID).Scan(&remaining)
	if remaining != 3 {
		t.Fatalf("SQLite remaining %d, want 3", remaining)
	}
	e.Clk.Advance(2 * time.Hour) // slot over, b still unpaid (and overdue)
	e.Flush()
	e.S.SyncStock(e.Ctx, 0)
	if active, _ := e.S.ActiveGoods(e.Ctx); !slices.Contains(active, g.ID) {
		t.Fatal("goods retired while an order is still unpaid")
	}
	e.S.ExpireDue(e.Ctx)
	e.S.SyncStock(e.Ctx, 0) // the expiry is not flushed yet
	if active, _ := e.S.ActiveGoods(e.Ctx); !slices.Contains(active, g.ID) {
		t.Fatal("goods retired before its last change was flushed")
	}
	e.Flush()
	e.S.SyncStock(e.Ctx, 0)
	if active, _ := e.S.ActiveGoods(e.Ctx); slices.Contains(active, g.ID) {
		t.Fatal("finished goods still active")
	}
	e.S.SQL.R.QueryRow(`SELECT remaining FROM goods WHERE id = ?`, g.ID).Scan(&remaining)
	if remaining != 4 {
		t.Fatalf("final SQLite remaining %d, want 4", remaining)
	}
	mine, err := e.S.MyOrders(e.Ctx, 2)
	if err != nil || len(mine) != 1 || mine[0].ID != b.ID || mine[0].Status != model.OrderExpired {
		t.Fatalf("my orders from SQLite: %+v %v", mine, err)
	}
	if o, err := e.S.PayOrder(e.Ctx, 1, a.ID); err != nil || o.Status != model.OrderPaid {
		t.Fatalf("paying a settled paid order again: %+v %v", o, err)
	}
	_, err = e.S.CancelOrder(e.Ctx, 2, b.ID)
	wantCode(t, "cancel a settled expired order", err, db.EEXPIRED)
}

// After Redis loses everything, goods are rebuilt from SQLite: units held by
// live orders stay taken, the sequence goes on, the limit marks hold.
func TestRebuildAfterRedisLoss(t *testing.T) { testRebuildAfterRedisLoss(t, 1) } // its figures are one bucket's (shards_test.go has buckets' own)

func testRebuildAfterRedisLoss(t *testing.T, k int) {
	e := newGoodsEnvK(t, k)
	g := e.LiveGoods(4, 1)
	o1, o2, o3 := e.Grab(1, g.ID), e.Grab(2, g.ID), e.Grab(3, g.ID) // units 4, 3, 2
	e.S.CancelOrder(e.Ctx, 1, o1.ID)                                // unit 4 back
	e.S.PayOrder(e.Ctx, 3, o3.ID)
	e.Flush()
	if err := rdb.FlushDB(e.Ctx, e.S.Redis); err != nil {
		t.Fatal(err)
	}
	if n, err := e.S.Preheat(e.Ctx); err != nil || n != 1 {
		t.Fatalf("preheat after the loss loaded %d (%v)", n, err)
	}
	if left := e.Remaining(g.ID); left != 2 {
		t.Fatalf("remaining %d, want 2 (units 4 and 1)", left)
	}
	_, err := e.S.Grab(e.Ctx, 2, g.ID)
	wantCode(t, "user 2 holds an order", err, db.ELIMITREACHED)
	a, b := e.Grab(5, g.ID), e.Grab(6, g.ID)
	units := []int64{a.Unit, b.Unit}
	slices.Sort(units)
	if !slices.Equal(units, []int64{1, 4}) || a.ID <= o3.ID || b.ID <= o3.ID {
		t.Fatalf("after rebuild: units %v ids %d %d, want units 1 and 4 and fresh IDs", units, a.ID, b.ID)
	}
	if _, err := e.S.PayOrder(e.Ctx, 2, o2.ID); err != nil {
		t.Fatalf("pay an order restored from SQLite: %v", err)
	}
	e.Flush()
	if st := e.Stats(g.ID); st.DB.Conflicts != 0 || st.DB.Paid != 2 || st.DB.Unpaid != 2 {
		t.Fatalf("stats after rebuild: %+v", st)
	}
}

// Slots and goods can be edited before the sale; once it starts only the words can change.
func TestEditSlotsAndGoods(t *testing.T) { testEditSlotsAndGoods(t, 1) } // its figures are one bucket's (shards_test.go has buckets' own)

func testEditSlotsAndGoods(t *testing.T, k int) {
	e := newGoodsEnvK(t, k)
	sl := e.Slot(time.Minute, time.Hour) // inside the window: loaded
	g := e.Goods(sl, 5, 1)
	in := goods.Input{Title: "Phone 2", Description: new("new"), PriceCents: 100, SeckillPriceCents: 50, Stock: 8, LimitPerUser: 2}
	if got, err := e.S.Update(e.Ctx, e.Merchant, g.ID, in); err != nil || got.Remaining != 8 || got.LimitPerUser != 2 {
		t.Fatalf("edit before the sale: %+v %v", got, err)
	}
	other := model.Claims{UserID: e.Merchant.UserID + 100, Role: model.RoleMerchant}
	_, err := e.S.Update(e.Ctx, other, g.ID, in)
	wantCode(t, "another merchant's goods", err, db.ENOTFOUND)
	newStart := e.Clk.Now().Add(30 * time.Second)
	if _, err := e.S.UpdateSlot(e.Ctx, e.Merchant, sl.ID, goods.SlotInput{Title: "Earlier", StartAt: newStart, EndAt: sl.EndAt}); err != nil {
		t.Fatal(err)
	}
	e.Clk.Advance(31 * time.Second)
	o := e.Grab(1, g.ID)
	if o.AmountCents != 50 || o.Unit != 8 {
		t.Fatalf("order after edits: %+v, want the new price and stock", o)
	}
	in.Stock = 20
	_, err = e.S.Update(e.Ctx, e.Merchant, g.ID, in)
	wantCode(t, "stock edit during the sale", err, db.ECONFLICT)
	in.Stock, in.Title = 8, "Phone 3"
	if got, err := e.S.Update(e.Ctx, e.Merchant, g.ID, in); err != nil || got.Title != "Phone 3" || got.Remaining != 7 {
		t.Fatalf("title edit during the sale: %+v %v", got, err)
	}
	_, err = e.S.UpdateSlot(e.Ctx, e.Merchant, sl.ID, goods.SlotInput{Title: "x", StartAt: newStart, EndAt: sl.EndAt.Add(time.Hour)})
	wantCode(t, "moving a live slot", err, db.ECONFLICT)
	if got, err := e.S.UpdateSlot(e.Ctx, e.Merchant, sl.ID, goods.SlotInput{Title: "Renamed", StartAt: newStart, EndAt: sl.EndAt}); err != nil || got.Title != "Renamed" {
		t.Fatalf("renaming a live slot: %+v %v", got, err)
	}
}
