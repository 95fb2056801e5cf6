package orders_test

import (
	"testing"

	"github.com/seckill/seckill/db/goods/goodstest"
	"github.com/seckill/seckill/db/model"
)

// A shopper's orders read while the flush lands an order's end are never
// missing an order nor show one as it was before a change already answered:
// the flush commits to the store before it drops the order from the
// shopper's list in Redis, and the read takes Redis first.
func TestMyOrdersAcrossAFlush(t *testing.T) {
	e := goodstest.New(t)
	g := e.LiveGoods(5, 3)
	const user = 7
	find := func(orders []model.Order, id int64) *model.Order {
		for i := range orders {
			if orders[i].ID == id {
				return &orders[i]
			}
		}
		return nil
	}
	cases := []struct {
		name    string
		flushed bool // the order's grab is in the store before it is cancelled
	}{{"never flushed before it ended", false}, {"flushed unpaid, then cancelled", true}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := e.Grab(user, g.ID)
			if c.flushed {
				e.Flush()
			}
			if _, err := e.S.CancelOrder(e.Ctx, user, o.ID); err != nil {
				t.Fatal(err)
			}
			// The cancel is answered; the flush lands between the two reads.
			e.S.BetweenMyOrdersReads(func() { e.Flush() })
			defer e.S.BetweenMyOrdersReads(nil)
			orders, err := e.S.MyOrders(e.Ctx, user)
			if err != nil {
				t.Fatal(err)
			}
			got := find(orders, o.ID)
			if got == nil {
				t.Fatalf("order %d (cancelled) is missing from the shopper's orders %+v", o.ID, orders)
			}
			if got.Status != model.OrderCancelled {
				t.Fatalf("order %d reads %s, want cancelled as its cancel answered", o.ID, got.Status)
			}
		})
	}
}
