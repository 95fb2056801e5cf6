package goods_test

import (
	"testing"
	"time"

	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/goods/internal/sale"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
)

// Every outcome of the grab script, including which rule wins when several are broken.
func TestGrabScriptOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(e *goodsEnv) (int64, error) // returns the goods and the last grab's error
		code string
		left int64 // remaining afterwards
	}{
		{"ok takes the top unit", func(e *goodsEnv) (int64, error) {
			g := e.LiveGoods(3, 1)
			o, err := e.S.Grab(e.Ctx, 7, g.ID)
			if err == nil && (o.Unit != 3 || o.Status != model.OrderUnpaid || o.AmountCents != 4999 || o.UserID != 7 || o.GoodsID != g.ID) {
				t.Errorf("order %+v: want unit 3, unpaid, 4999 cents, user 7", o)
			}
			if err == nil && !o.ExpiresAt.Equal(e.Clk.Now().Add(e.S.OrderTTL)) {
				t.Errorf("expires_at %s, want now + TTL", o.ExpiresAt)
			}
			return g.ID, err
		}, "", 2},
		{"sold out", func(e *goodsEnv) (int64, error) {
			g := e.LiveGoods(1, 1)
			e.Grab(1, g.ID)
			_, err := e.S.Grab(e.Ctx, 2, g.ID)
			return g.ID, err
		}, db.ESOLDOUT, 0},
		{"limit reached", func(e *goodsEnv) (int64, error) {
			g := e.LiveGoods(5, 1)
			e.Grab(1, g.ID)
			_, err := e.S.Grab(e.Ctx, 1, g.ID)
			return g.ID, err
		}, db.ELIMITREACHED, 4},
		{"limit 2 allows two", func(e *goodsEnv) (int64, error) {
			g := e.LiveGoods(5, 2)
			e.Grab(1, g.ID)
			e.Grab(1, g.ID)
			_, err := e.S.Grab(e.Ctx, 1, g.ID)
			return g.ID, err
		}, db.ELIMITREACHED, 3},
		{"not started, loaded by preheat", func(e *goodsEnv) (int64, error) {
			g := e.Goods(e.Slot(time.Minute, time.Hour), 5, 1)
			_, err := e.S.Grab(e.Ctx, 1, g.ID)
			return g.ID, err
		}, db.ENOTSTARTED, 5},
		{"not started, not loaded yet", func(e *goodsEnv) (int64, error) {
			g := e.Goods(e.Slot(time.Hour, time.Hour), 5, 1)
			_, err := e.S.Grab(e.Ctx, 1, g.ID)
			return g.ID, err
		}, db.ENOTSTARTED, 5},
		{"ended", func(e *goodsEnv) (int64, error) {
			g := e.LiveGoods(5, 1)
			e.Clk.Advance(2 * time.Hour)
			_, err := e.S.Grab(e.Ctx, 1, g.ID)
			return g.ID, err
		}, db.EENDED, 5},
		{"ended wins over limit and sold out", func(e *goodsEnv) (int64, error) {
			g := e.LiveGoods(1, 1)
			e.Grab(1, g.ID)
			e.Clk.Advance(2 * time.Hour)
			_, err := e.S.Grab(e.Ctx, 1, g.ID)
			return g.ID, err
		}, db.EENDED, 0},
		{"limit wins over sold out", func(e *goodsEnv) (int64, error) {
			g := e.LiveGoods(1, 1)
			e.Grab(1, g.ID)
			_, err := e.S.Grab(e.Ctx, 1, g.ID)
			return g.ID, err
		}, db.ELIMITREACHED, 0},
		{"unknown goods", func(e *goodsEnv) (int64, error) {
			_, err := e.S.Grab(e.Ctx, 1, 987654)
			return 0, err
		}, db.ENOTFOUND, 0},
		{"a retried request gets the same order and takes one unit", func(e *goodsEnv) (int64, error) {
			g := e.LiveGoods(5, 3)
			grab := []goods.Grab{{User: 1, Goods: g.ID, Request: "req-1"}}
			x, y := e.S.Decide(e.Ctx, grab)[0], e.S.Decide(e.Ctx, grab)[0]
			a, err1, b, err2 := x.Order, x.Err, y.Order, y.Err
			if err1 != nil || err2 != nil || a.ID != b.ID || a.Unit != b.Unit {
				t.Errorf("retry: %+v %v / %+v %v, want the same order twice", a, err1, b, err2)
			}
			return g.ID, nil
		}, "", 4},
		{"a unit given back is sold again before fresh ones", func(e *goodsEnv) (int64, error) {
			g := e.LiveGoods(5, 1)
			o := e.Grab(1, g.ID)
			if _, err := e.S.CancelOrder(e.Ctx, 1, o.ID); err != nil {
				t.Fatal(err)
			}
			again := e.Grab(2, g.ID)
			if again.Unit != o.Unit || again.ID == o.ID {
				t.Errorf("regrab took unit %d (order %d), want unit %d in a new order", again.Unit, again.ID, o.Unit)
			}
			return g.ID, nil
		}, "", 4},
		{"the slot that is not loaded but live is loaded on the spot", func(e *goodsEnv) (int64, error) {
			g := e.LiveGoods(5, 1)
			e.S.Redis.Del(e.Ctx, sale.Key(g.ID, "info"))
			_, err := e.S.Grab(e.Ctx, 1, g.ID)
			return g.ID, err
		}, "", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newGoodsEnv(t)
			g, err := tc.run(e)
			wantCode(t, "grab", err, tc.code)
			if g != 0 {
				if got := e.Remaining(g); got != tc.left {
					t.Fatalf("remaining %d, want %d", got, tc.left)
				}
				e.CheckBalance(g, "after")
			}
		})
	}
}

// Every outcome of pay, cancel and expire on one order.
func TestOrderScriptOutcomes(t *testing.T) {
	type result struct {
		code   string // error code of the action, "" for success
		status string // the order's status afterwards
		left   int64  // remaining afterwards (stock 5, one order taken)
	}
	pay := func(e *goodsEnv, o *model.Order) error { _, err := e.S.PayOrder(e.Ctx, o.UserID, o.ID); return err }
	cancel := func(e *goodsEnv, o *model.Order) error { _, err := e.S.CancelOrder(e.Ctx, o.UserID, o.ID); return err }
	expire := func(e *goodsEnv, o *model.Order) error { return e.S.ExpireOrder(e.Ctx, o.ID) }
	late := func(e *goodsEnv, _ *model.Order) { e.Clk.Advance(e.S.OrderTTL) }
	for _, tc := range []struct {
		name   string
		before []func(e *goodsEnv, o *model.Order) error
		wait   func(e *goodsEnv, o *model.Order)
		action func(e *goodsEnv, o *model.Order) error
		want   result
	}{
		{"pay unpaid", nil, nil, pay, result{"", model.OrderPaid, 4}},
		{"pay already paid answers it unchanged", []func(*goodsEnv, *model.Order) error{pay}, nil, pay, result{"", model.OrderPaid, 4}},
		{"pay expired", nil, late, func(e *goodsEnv, o *model.Order) error {
			if err := expire(e, o); err != nil {
				return err
			}
			return pay(e, o)
		}, result{db.EEXPIRED, model.OrderExpired, 5}},
		{"pay cancelled", []func(*goodsEnv, *model.Order) error{cancel}, nil, pay, result{db.EEXPIRED, model.OrderCancelled, 5}},
		{"pay past the deadline expires it", nil, late, pay, result{db.EEXPIRED, model.OrderExpired, 5}},
		{"pay someone else's order", nil, nil, func(e *goodsEnv, o *model.Order) error {
			_, err := e.S.PayOrder(e.Ctx, o.UserID+1, o.ID)
			return err
		}, result{db.ENOTFOUND, model.OrderUnpaid, 4}},
		{"pay an unknown order", nil, nil, func(e *goodsEnv, o *model.Order) error {
			_, err := e.S.PayOrder(e.Ctx, o.UserID, o.ID+1)
			return err
		}, result{db.ENOTFOUND, model.OrderUnpaid, 4}},
		{"cancel unpaid gives the unit back", nil, nil, cancel, result{"", model.OrderCancelled, 5}},
		{"cancel cancelled answers it unchanged", []func(*goodsEnv, *model.Order) error{cancel}, nil, cancel, result{"", model.OrderCancelled, 5}},
		{"cancel paid", []func(*goodsEnv, *model.Order) error{pay}, nil, cancel, result{db.ECONFLICT, model.OrderPaid, 4}},
		{"cancel expired", nil, late, func(e *goodsEnv, o *model.Order) error {
			expire(e, o)
			return cancel(e, o)
		}, result{db.EEXPIRED, model.OrderExpired, 5}},
		{"cancel someone else's order", nil, nil, func(e *goodsEnv, o *model.Order) error {
			_, err := e.S.CancelOrder(e.Ctx, o.UserID+1, o.ID)
			return err
		}, result{db.ENOTFOUND, model.OrderUnpaid, 4}},
		{"expire unpaid at the deadline", nil, late, expire, result{"", model.OrderExpired, 5}},
		{"expire twice is harmless", nil, late, func(e *goodsEnv, o *model.Order) error {
			expire(e, o)
			return expire(e, o)
		}, result{"", model.OrderExpired, 5}},
		{"expire paid does nothing", []func(*goodsEnv, *model.Order) error{pay}, late, expire, result{"", model.OrderPaid, 4}},
		{"expire cancelled does nothing", []func(*goodsEnv, *model.Order) error{cancel}, late, expire, result{"", model.OrderCancelled, 5}},
		{"expire before the deadline is refused", nil, nil, expire, result{db.ECONFLICT, model.OrderUnpaid, 4}},
		{"expire an unknown order does nothing", nil, late, func(e *goodsEnv, o *model.Order) error {
			return e.S.ExpireOrder(e.Ctx, o.ID+1)
		}, result{"", model.OrderUnpaid, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newGoodsEnv(t)
			g := e.LiveGoods(5, 1)
			o := e.Grab(11, g.ID)
			for _, b := range tc.before {
				if err := b(e, o); err != nil {
					t.Fatal(err)
				}
			}
			if tc.wait != nil {
				tc.wait(e, o)
			}
			wantCode(t, "action", tc.action(e, o), tc.want.code)
			got, err := e.S.Order(e.Ctx, o.UserID, o.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != tc.want.status {
				t.Fatalf("status %q, want %q", got.Status, tc.want.status)
			}
			if left := e.Remaining(g.ID); left != tc.want.left {
				t.Fatalf("remaining %d, want %d", left, tc.want.left)
			}
			e.CheckBalance(g.ID, "after")
			// A closed order clears the limit mark: the user may grab again.
			_, err = e.S.Grab(e.Ctx, o.UserID, g.ID)
			if open := got.Status == model.OrderUnpaid || got.Status == model.OrderPaid; open {
				wantCode(t, "grab again while holding the order", err, db.ELIMITREACHED)
			} else {
				wantCode(t, "grab again after the order closed", err, "")
			}
		})
	}
}

// The order is readable by its owner only, from Redis and (once the goods is
// retired) from SQLite.
func TestOrderReadsAndMyOrders(t *testing.T) { eachShards(t, testOrderReadsAndMyOrders) }

func testOrderReadsAndMyOrders(t *testing.T, k int) {
	e := newGoodsEnvK(t, k)
	g1, g2 := e.LiveGoods(5, 1), e.LiveGoods(5, 1)
	a := e.Grab(3, g1.ID)
	b := e.Grab(3, g2.ID)
	e.Grab(4, g1.ID)
	if got, err := e.S.Order(e.Ctx, 3, a.ID); err != nil || got.ID != a.ID {
		t.Fatalf("own order: %+v %v", got, err)
	}
	_, err := e.S.Order(e.Ctx, 4, a.ID)
	wantCode(t, "another user's order", err, db.ENOTFOUND)
	_, err = e.S.Order(e.Ctx, 3, 42)
	wantCode(t, "not an order ID", err, db.ENOTFOUND)

	// Not flushed yet: My orders still lists both, newest first, with titles.
	mine, err := e.S.MyOrders(e.Ctx, 3)
	if err != nil || len(mine) != 2 || mine[0].GoodsTitle != "Phone" {
		t.Fatalf("my orders before flush: %+v %v", mine, err)
	}
	e.Flush()
	if _, err := e.S.PayOrder(e.Ctx, 3, b.ID); err != nil {
		t.Fatal(err)
	}
	mine, _ = e.S.MyOrders(e.Ctx, 3)
	if len(mine) != 2 {
		t.Fatalf("my orders after flush: %+v", mine)
	}
	for _, o := range mine {
		if o.ID == b.ID && o.Status != model.OrderPaid {
			t.Fatalf("paid order shows %q: Redis's live state must win over the stale SQLite row", o.Status)
		}
	}
}
