package goods_test

import (
	"testing"
	"time"

	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/model"
)

// A shopper's orders read while the flush lands an order's end are never
// missing an order nor show one as it was before a change already answered:
// the flush commits to the store before it drops the order from the
// shopper's list in Redis, and the read takes Redis first.
func TestMyOrdersAcrossAFlush(t *testing.T) {
	e := newGoodsEnv(t)
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

// New goods of several buckets never read one bucket's stock: a process
// that looked at the goods before any process loaded it into Redis reads
// the sum of every bucket once it is loaded, at once.
func TestNewShardedGoodsReadWholeStock(t *testing.T) {
	const stock, k = 10, 2
	e := newGoodsEnvK(t, k)
	g := e.Goods(e.Slot(72*time.Hour, time.Hour), stock, 1) // far off: not preheated at creation
	other := goods.New(e.S.Backend)                         // another web process over the same Redis and store
	before, err := other.Get(e.Ctx, g.ID)
	if err != nil {
		t.Fatal(err)
	}
	if before.Remaining != stock {
		t.Fatalf("before the load: remaining %d, want %d", before.Remaining, stock)
	}
	if _, err := e.S.Load(e.Ctx, g); err != nil { // this process preheats it
		t.Fatal(err)
	}
	if n := e.Remaining(g.ID); n != stock {
		t.Fatalf("the loading process reads remaining %d, want %d", n, stock)
	}
	after, err := other.Get(e.Ctx, g.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.Remaining != stock {
		t.Fatalf("the other process reads remaining %d after the load, want the whole stock %d", after.Remaining, stock)
	}
}
