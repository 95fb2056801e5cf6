package rdb

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/lifecycle"
)

// Clock is a process's clock set by Redis's, so sale windows and order
// deadlines are judged alike on every process even when one host's clock
// is off: it reads Redis's TIME now and then and adds the difference from
// the host's clock to the process's. A difference under ClockTolerance is
// taken for the reading's own noise and left alone, so a healthy host (and
// a test that moves the process's clock on purpose) keeps its own time.
type Clock struct {
	local  func() time.Time // the process's clock (tests move it)
	system func() time.Time // the host's clock, the one Redis's is compared with
	redis  redis.UniversalClient
	skew   atomic.Int64    // ns added to local
	loop   *lifecycle.Loop // reads the difference again (Loop)
}

// ClockTolerance is the largest difference from Redis's clock left alone.
const ClockTolerance = 250 * time.Millisecond

// clockEvery is how often the difference is read again.
const clockEvery = 10 * time.Second

// NewClock reads the difference between the host's clock (system) and
// r's once; its Loop reads it again every clockEvery. The embedded Redis
// runs on this host's clock: with it the clock adds nothing.
func NewClock(ctx context.Context, r *Redis, local, system func() time.Time) *Clock {
	k := &Clock{local: local, system: system, redis: r.Client}
	k.loop = lifecycle.New("redis clock", func(ctx context.Context) {
		if r.Embedded {
			return
		}
		t := time.NewTicker(clockEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				k.measure(context.Background())
			}
		}
	})
	if !r.Embedded {
		k.measure(ctx)
	}
	return k
}

// Loop reads the difference from Redis's clock every clockEvery until
// stopped (by Close at the latest). Main starts it.
func (k *Clock) Loop() *lifecycle.Loop { return k.loop }

// Now is the process's clock plus the host's difference from Redis's.
func (k *Clock) Now() time.Time { return k.local().Add(time.Duration(k.skew.Load())) }

// Skew is what Now adds to the process's clock.
func (k *Clock) Skew() time.Duration { return time.Duration(k.skew.Load()) }

// measure reads Redis's TIME between two readings of the host's clock,
// three times, and keeps the reading of the shortest round trip (the least
// noise); a measure whose readings all fail keeps the last difference.
func (k *Clock) measure(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	best, rtt := time.Duration(0), time.Duration(-1)
	for range 3 {
		before := k.system()
		t, err := k.redis.Time(ctx).Result()
		if err != nil {
			continue
		}
		after := k.system()
		if d := after.Sub(before); rtt < 0 || d < rtt {
			best, rtt = t.Sub(before.Add(d/2)), d
		}
	}
	if rtt < 0 {
		return
	}
	if best > -ClockTolerance && best < ClockTolerance {
		best = 0
	}
	k.skew.Store(int64(best))
}

// Close stops the readings.
func (k *Clock) Close() { k.loop.Stop() }
