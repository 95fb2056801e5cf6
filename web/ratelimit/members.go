package ratelimit

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Members counts the web processes that share the limits, so each can hand
// out its share. Every process writes a heartbeat into one sorted set (one
// key: safe on Redis Cluster) and counts the heartbeats younger than three
// intervals. All of it runs off the request path.
type Members struct {
	rdb   redis.UniversalClient
	id    string
	every time.Duration
	now   func() time.Time
	// OnCount receives the number of live processes after each beat.
	OnCount func(n int)
}

// membersKey is the sorted set of web processes' heartbeats (member → unix ms).
func membersKey() string { return "{seckill:limits}:web-processes" }

// NewMembers returns the heartbeat of the process id, beating every interval.
func NewMembers(rdb redis.UniversalClient, id string, every time.Duration, now func() time.Time) *Members {
	if now == nil {
		now = time.Now
	}
	return &Members{rdb: rdb, id: id, every: every, now: now}
}

// Beat records this process as alive, forgets silent ones and reports the count.
func (m *Members) Beat(ctx context.Context) (int, error) {
	now := m.now()
	stale := now.Add(-3 * m.every).UnixMilli()
	var card *redis.IntCmd
	_, err := m.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, membersKey(), redis.Z{Score: float64(now.UnixMilli()), Member: m.id})
		p.ZRemRangeByScore(ctx, membersKey(), "-inf", "("+strconv.FormatInt(stale, 10))
		p.PExpire(ctx, membersKey(), 10*m.every)
		card = p.ZCard(ctx, membersKey())
		return nil
	})
	if err != nil {
		return 0, err
	}
	n := int(card.Val())
	if m.OnCount != nil {
		m.OnCount(n)
	}
	return n, nil
}

// Run beats until ctx ends, then removes this process from the set.
// A failed beat keeps the last count: a Redis outage must not multiply the limits.
func (m *Members) Run(ctx context.Context) {
	t := time.NewTicker(m.every)
	defer t.Stop()
	for {
		m.Beat(ctx)
		select {
		case <-ctx.Done():
			leave, cancel := context.WithTimeout(context.Background(), time.Second)
			m.rdb.ZRem(leave, membersKey(), m.id)
			cancel()
			return
		case <-t.C:
		}
	}
}
