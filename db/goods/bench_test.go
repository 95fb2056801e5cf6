package goods_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/seckill/seckill/db/goods"
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
			e.s.Now = time.Now
			if withExpiry {
				e.s.Tasks = asynq.NewClientFromRedisClient(e.s.Redis)
			}
			sl := e.slot(-time.Minute, time.Hour)
			items := make([]*model.Goods, b.N/goods.MaxStock+1)
			for i := range items {
				items[i] = e.goods(sl, goods.MaxStock, 1)
			}
			var next atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(16) // 16 goroutines per CPU: the work is mostly waiting on Redis
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := next.Add(1)
					if _, err := e.s.Grab(e.ctx, i, items[(i-1)/goods.MaxStock].ID); err != nil {
						b.Errorf("grab %d: %v", i, err)
						return
					}
				}
			})
		})
	}
}
