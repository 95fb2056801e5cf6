package fair_test

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/goods"
)

// BenchmarkQueueJoin sets a waiting room's join against a grab refused by
// Redis (sold out, asked of the script: this process does not follow the
// sales, so nothing is answered from memory), each through the service as
// the handlers call it, against the Redis the tests use (REDIS_URL for a
// real one). Every join is a new shopper.
//
//	REDIS_URL=redis://127.0.0.1:6390 go test ./db/goods/ -run XXX -bench QueueJoin
func BenchmarkQueueJoin(b *testing.B) {
	b.Run("join", func(b *testing.B) {
		e := newGoodsEnv(b)
		g := e.queueGoods(10, 1, time.Minute)
		e.Clk.Advance(time.Minute)
		var next atomic.Int64
		b.SetParallelism(16)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, _, err := e.F.JoinQueue(e.Ctx, next.Add(1), g.ID, ""); err != nil {
					b.Errorf("join: %v", err)
					return
				}
			}
		})
	})
	b.Run("refusal", func(b *testing.B) {
		e := newGoodsEnv(b)
		g := e.LiveGoods(1, 1)
		e.Grab(1, g.ID)
		var next atomic.Int64
		next.Store(1)
		b.SetParallelism(16)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := e.GrabWith(next.Add(1), g.ID, goods.Pass{}); db.ErrorCode(err) != db.ESOLDOUT {
					b.Errorf("grab: %v, want sold out", err)
					return
				}
			}
		})
	})
}

// A million shoppers wait in one room: joined straight through the join
// script (pipelined), then the Redis's used memory is read. Run against a
// real redis-server (the embedded one does not report memory):
//
//	QUEUE_SCALE=1000000 REDIS_URL=redis://127.0.0.1:6390 go test ./db/goods/ -run QueueMillion -v
func TestQueueMillionWaiting(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("QUEUE_SCALE"))
	if n <= 0 {
		t.Skip("QUEUE_SCALE unset: set it to the shoppers to join (1000000) and REDIS_URL to a real redis-server")
	}
	e := newGoodsEnv(t)
	g := e.queueGoods(10, 1, time.Minute)
	e.Clk.Advance(time.Minute)
	ctx := context.Background()
	used := func() int64 {
		info, err := e.S.Redis.Info(ctx, "memory").Result()
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`used_memory:(\d+)`).FindStringSubmatch(info)
		if m == nil {
			t.Skipf("this Redis reports no used_memory (the embedded one): use a real redis-server")
		}
		v, _ := strconv.ParseInt(m[1], 10, 64)
		return v
	}
	e.join(1, g.ID) // the room's keys exist
	before := used()
	start := time.Now()
	if err := e.F.JoinQueueBulk(ctx, g.ID, 2, int64(n), e.Clk.Now()); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	after := used()
	st := e.queueStats(g.ID)
	if st.Joined != int64(n) {
		t.Fatalf("%d joined, want %d", st.Joined, n)
	}
	per := float64(after-before) / float64(n-1)
	t.Logf("%d shoppers waiting: Redis used memory grew %.1f MB (%.0f bytes a shopper); joined in %v (%.0f joins/s pipelined)",
		n, float64(after-before)/1e6, per, took.Round(time.Millisecond), float64(n-1)/took.Seconds())
	if per > 200 { // 200 bytes a shopper is 200 MB a million
		t.Fatalf("%.0f bytes a waiting shopper: %.0f MB a million, want at most 200", per, per)
	}
	// The tail of the queue reads its ticket.
	if tk := e.ticket(int64(n), g.ID); tk.Position != int64(n) {
		t.Fatalf("the last shopper: %+v", tk)
	}
}
