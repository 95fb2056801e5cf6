package orders_test

import (
	"runtime"
	"sync"
	"testing"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/goods/goodstest"
	"github.com/seckill/seckill/db/goods/internal/sale"
	"github.com/seckill/seckill/db/model"
)

// Each bucket has a flush lane of its own, and a unit a cancel gave back in
// one bucket may be sold again from another (a grab whose home is empty
// takes it). The holders of bucket 1 cancel while as many shoppers of
// bucket 0 grab, released at once; the flush then takes bucket 0's lane
// first, carrying the new orders while the cancels that freed their units
// are still queued in bucket 1's. Every grab answered keeps its order, live in the
// store and its shopper's, none is refused as sold twice, and the units are
// conserved: each live order holds its own, and live + remaining == stock.
func TestUnitSoldAgainAcrossLanes(t *testing.T) {
	const k, stock = 2, 20
	e := goodstest.NewK(t, k)
	g := e.LiveGoods(stock, 1)
	// The holders: shoppers of both buckets until the stock is gone.
	holders := map[int64]*model.Order{}
	var mine []*model.Order // the holders of bucket 1, who cancel
	for u := int64(1); len(holders) < stock; u++ {
		o := e.Grab(u, g.ID)
		holders[u] = o
		if sale.HomeBucket(u, k) == 1 {
			mine = append(mine, o)
		}
	}
	e.Flush() // the store holds them
	// As many newcomers of bucket 0, whose home is empty: each unit they
	// win was given back in bucket 1.
	var comers []int64
	for u := int64(1000); len(comers) < len(mine); u++ {
		if sale.HomeBucket(u, k) == 0 {
			comers = append(comers, u)
		}
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := map[int64]*model.Order{}
	for _, o := range mine {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if _, err := e.S.CancelOrder(e.Ctx, o.UserID, o.ID); err != nil {
				t.Errorf("cancel order %d: %v", o.ID, err)
			}
		}()
	}
	for _, u := range comers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for { // sold out until a cancel gives a unit back; there are as many as grabbers
				o, err := e.S.Grab(e.Ctx, u, g.ID)
				if db.ErrorCode(err) == db.ESOLDOUT {
					runtime.Gosched()
					continue
				}
				if err != nil {
					t.Errorf("user %d grab: %v", u, err)
					return
				}
				mu.Lock()
				won[u] = o
				mu.Unlock()
				return
			}
		}()
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for _, o := range mine {
		delete(holders, o.UserID)
	}
	for u, o := range won {
		holders[u] = o
	}
	e.Flush() // bucket 0's lane, then bucket 1's; then the store's refusals fail
	units := map[int64]int64{}
	for u, o := range holders {
		var got model.Order
		err := e.S.SQL.R.QueryRow(`SELECT user_id, unit, status FROM orders WHERE id = ?`, o.ID).Scan(&got.UserID, &got.Unit, &got.Status)
		if err != nil {
			t.Fatalf("order %d answered to user %d is not in the store's orders: %v", o.ID, u, err)
		}
		if got.UserID != u || got.Unit != o.Unit || got.Status != model.OrderUnpaid {
			t.Fatalf("order %d answered to user %d (unit %d, unpaid) is in the store as user %d, unit %d, %s",
				o.ID, u, o.Unit, got.UserID, got.Unit, got.Status)
		}
		if now, err := e.S.Order(e.Ctx, u, o.ID); err != nil || now.Status != model.OrderUnpaid {
			t.Fatalf("order %d of user %d is now %+v, %v; want unpaid", o.ID, u, now, err)
		}
		if other, ok := units[got.Unit]; ok {
			t.Fatalf("unit %d held by users %d and %d", got.Unit, other, u)
		}
		units[got.Unit] = u
	}
	var refused int
	if err := e.S.SQL.R.QueryRow(`SELECT COUNT(*) FROM order_conflicts WHERE goods_id = ?`, g.ID).Scan(&refused); err != nil || refused != 0 {
		t.Fatalf("the store refused %d orders (%v), want none", refused, err)
	}
	st := e.Stats(g.ID)
	if st.Unpaid != stock || st.DB.Unpaid != stock || st.Remaining != 0 || st.Failed != 0 || st.DB.Failed != 0 {
		t.Fatalf("stats: %+v; want %d unpaid on both sides, none failed, none left", st, stock)
	}
}
