package goods_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/db/goods/internal/sale"

	"github.com/hibiken/asynq"
	"github.com/seckill/seckill/db/model"
)

// BenchmarkGrab measures the grab path against the Redis the tests use (run
// with REDIS_URL for a real one): "script" is the one Lua round trip alone,
// "with-expiry" adds the Asynq enqueue of the order's expiry, as served.
// Every grab is a new user, so each one takes a unit.
func BenchmarkGrab(b *testing.B) {
	for _, withExpiry := range []bool{false, true} {
		name := "script"
		if withExpiry {
			name = "with-expiry"
		}
		b.Run(name, func(b *testing.B) {
			e := newGoodsEnv(b)
			e.S.Now = time.Now
			if withExpiry {
				e.S.Tasks = asynq.NewClientFromRedisClient(e.S.Redis)
			}
			sl := e.Slot(-time.Minute, time.Hour)
			items := make([]*model.Goods, b.N/int(model.GoodsStock.Max)+1)
			for i := range items {
				items[i] = e.Goods(sl, model.GoodsStock.Max, 1)
			}
			var next atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(16) // 16 goroutines per CPU: the work is mostly waiting on Redis
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := next.Add(1)
					if _, err := e.S.Grab(e.Ctx, i, items[(i-1)/model.GoodsStock.Max].ID); err != nil {
						b.Errorf("grab %d: %v", i, err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkFlushOrders measures the orders flush into the durable store of
// the run (SQLite, or PostgreSQL with DATABASE_URL): 20,000 order records
// queued in Redis, then one flush, in batches of backend.FlushBatchSize,
// each staged and applied with set-based statements. "insert" flushes new
// orders, "update" the same orders paid; rows/s is records applied a second.
//
//	go test ./db/goods/ -run XXX -bench FlushOrders -benchtime 5x
func BenchmarkFlushOrders(b *testing.B) {
	const orders = 20_000
	for _, paid := range []bool{false, true} {
		name := "insert"
		if paid {
			name = "update"
		}
		b.Run(name, func(b *testing.B) {
			e := newGoodsEnv(b)
			sl := e.Slot(-time.Minute, time.Hour)
			queue := func(g *model.Goods, status string, version int64) {
				now := e.Clk.Now().UnixMilli()
				recs := make([]any, orders)
				for i := range recs {
					seq := int64(i + 1)
					recs[i] = fmt.Sprintf("%d|%d|%d|4999|%s|%d|%d|%d|%d", seq, seq, orders-seq+1, status, now, now+900_000, version, now+version)
				}
				if err := e.S.Redis.RPush(e.Ctx, sale.Key(g.ID, "pending"), recs...).Err(); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				g := e.Goods(sl, orders, 1)
				queue(g, model.OrderUnpaid, 1)
				if paid {
					e.Flush()
					queue(g, model.OrderPaid, 2)
				}
				b.StartTimer()
				e.Flush()
			}
			b.ReportMetric(float64(orders*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
