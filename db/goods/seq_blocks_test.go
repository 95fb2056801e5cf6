package goods_test

import (
	"sync"
	"testing"

	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/rdb"
)

// A bucket that Redis loses (a node restarted without persistence and
// without a replica) before its orders were flushed is loaded again from the
// store, and its new orders take IDs above every one it may have given out:
// an order ID acknowledged to one shopper is never given to another.
func TestOrderIDsNeverRepeatAfterRedisLoss(t *testing.T) {
	eachShards(t, func(t *testing.T, k int) {
		e := newGoodsEnvK(t, k)
		g := e.LiveGoods(40, 1)
		given := map[int64]int64{} // order ID → shopper
		for u := int64(1); u <= 10; u++ {
			given[e.Grab(u, g.ID).ID] = u
		}
		if err := rdb.FlushDB(e.Ctx, e.S.Redis); err != nil { // lost before the flush
			t.Fatal(err)
		}
		for u := int64(11); u <= 30; u++ {
			o := e.Grab(u, g.ID)
			if was, ok := given[o.ID]; ok {
				t.Fatalf("order ID %d given to shopper %d after it was given to shopper %d", o.ID, u, was)
			}
			given[o.ID] = u
		}
	})
}

// Sequences are reserved a block at a time: grabs that cross many blocks at
// once, released together, all win with IDs of their own, and the store's
// ceiling stays ahead of every sequence given out.
func TestOrderSeqBlocksExtend(t *testing.T) {
	eachShards(t, func(t *testing.T, k int) {
		e := newGoodsEnvK(t, k)
		e.S.SeqBlock = 10
		g := e.LiveGoods(200, 1)
		orders := make([]*model.Order, 200)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range orders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				o, err := e.S.Grab(e.Ctx, int64(i+1), g.ID)
				if err != nil {
					t.Errorf("grab %d: %v", i+1, err)
					return
				}
				orders[i] = o
			}()
		}
		close(start)
		wg.Wait()
		seen := map[int64]bool{}
		for _, o := range orders {
			if o == nil {
				continue
			}
			if seen[o.ID] {
				t.Fatalf("order ID %d given twice", o.ID)
			}
			seen[o.ID] = true
			bucketN := (o.ID % model.OrderSeqSpan) / (model.OrderSeqSpan / 10)
			ceiling, err := e.S.IssueCeiling(e.Ctx, backend.IDRun{Kind: backend.GoodsOrders, Item: g.ID, Part: bucketN})
			if err != nil {
				t.Fatal(err)
			}
			if seq := o.ID % model.OrderSeqSpan; seq > ceiling {
				t.Fatalf("order sequence %d given above the reserved ceiling %d", seq, ceiling)
			}
		}
		if len(seen) != 200 {
			t.Fatalf("%d of 200 grabs won", len(seen))
		}
	})
}
