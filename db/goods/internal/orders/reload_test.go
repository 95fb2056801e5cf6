package orders_test

import (
	"testing"

	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/goods/goodstest"
)

// A Redis that comes back empty mid-sale is rebuilt from the store by the
// first grab that finds the goods missing, while a flusher that took a batch
// of the lost Redis's orders may still be at work. The rebuild fences the
// goods' lanes before it reads the store, so that batch has either committed
// and been read, or never commits: no unit its orders hold is sold again.
// Here the flusher stands between taking its batch and applying it while
// Redis loses the goods and a crowd of newcomers buys the whole stock from
// the rebuilt Redis; it then goes on. Every newcomer's order is kept, none
// is refused as sold twice, and the lost orders (phantom wins: phantoms.go
// tells their shoppers) hold no unit.
func TestReloadFencesAFlushAtWork(t *testing.T) {
	goodstest.EachShards(t, func(t *testing.T, k int) {
		const stock = 12
		e := goodstest.NewK(t, k)
		g := e.LiveGoods(stock, 1)
		for u := int64(1); u <= 4; u++ {
			e.Grab(u, g.ID) // in Redis alone
		}
		flusher, done := dbtest.HoldFlusher(e.Ctx), make(chan error, 1)
		go func() { done <- e.S.FlushOrders(flusher.Ctx) }()
		<-flusher.Held
		if err := e.S.LoseGoods(e.Ctx, g.ID); err != nil {
			t.Fatal(err)
		}
		var comers []int64
		for u := int64(101); u < 101+stock; u++ {
			o := e.Grab(u, g.ID) // the first finds the goods missing and rebuilds it from the store
			comers = append(comers, o.ID)
		}
		flusher.Release()
		if err := <-done; err == nil || e.S.Flushes.Fenced.Load() != 1 {
			t.Errorf("the flush that held a batch of the lost Redis ended with %v (%d batches fenced off), want it fenced off",
				err, e.S.Flushes.Fenced.Load())
		}
		e.Flush()
		var refused, lost int
		e.S.SQL.R.QueryRow(`SELECT COUNT(*) FROM order_conflicts WHERE goods_id = ?`, g.ID).Scan(&refused)
		e.S.SQL.R.QueryRow(`SELECT COUNT(*) FROM orders WHERE goods_id = ? AND user_id <= 4`, g.ID).Scan(&lost)
		if refused != 0 || lost != 0 {
			t.Fatalf("the store refused %d orders and holds %d of the lost Redis's; want none of either", refused, lost)
		}
		units := map[int64]bool{}
		for _, id := range comers {
			var unit int64
			var status string
			if err := e.S.SQL.R.QueryRow(`SELECT unit, status FROM orders WHERE id = ?`, id).Scan(&unit, &status); err != nil || status != "unpaid" {
				t.Fatalf("order %d answered after the rebuild: %s, %v; want it unpaid in the store", id, status, err)
			}
			if units[unit] {
				t.Fatalf("unit %d held twice", unit)
			}
			units[unit] = true
		}
	})
}
