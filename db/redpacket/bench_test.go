package redpacket_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/seckill/seckill/db/model"
)

// BenchmarkGrab measures the grab path (one Lua script, one round
// trip) against the Redis of REDIS_URL, or the embedded one when it is unset.
// Every grab is a distinct user winning a share; packets of 100,000 shares
// are created up front, outside the timer.
func BenchmarkGrab(b *testing.B) {
	for _, bc := range []struct {
		name     string
		parallel bool
	}{{"serial", false}, {"parallel", true}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			s := newRPService(b)
			owner := s.users(1)[0]
			var packets []int64
			for left := b.N; left > 0; left -= int(model.RedPacketCount.Max) {
				n := int64(min(left, int(model.RedPacketCount.Max)))
				p, err := s.Create(ctx, owner, model.NewRedPacket{Title: "bench", TotalCents: n * 100, Count: n, Mode: model.RedPacketRandom})
				if err != nil {
					b.Fatal(err)
				}
				packets = append(packets, p.ID)
			}
			var next atomic.Int64
			grab := func() {
				i := next.Add(1) - 1
				if _, err := s.Grab(ctx, i+1, packets[i/model.RedPacketCount.Max]); err != nil {
					b.Error(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			if bc.parallel {
				b.SetParallelism(16) // many requests in flight, as under a real spike
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						grab()
					}
				})
			} else {
				for i := 0; i < b.N; i++ {
					grab()
				}
			}
		})
	}
}
