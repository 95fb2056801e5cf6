package ratelimit

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// Limiter keeps one token bucket per key in this process: a key may spend a
// whole period's worth at once, then gets tokens back evenly over the period.
// When several web processes serve the shop, each hands out only its share
// (SetShare), so a client spread over all of them still gets the limit in
// total. A check is a map look-up under one of many locks: no I/O.
type Limiter[K comparable] struct {
	rate   Rate
	now    func() time.Time
	share  atomic.Int64 // number of processes sharing the limit (≥ 1)
	seed   maphash.Seed
	shards [64]shard[K]
}

type shard[K comparable] struct {
	mu      sync.Mutex
	buckets map[K]*bucket
}

type bucket struct {
	tokens float64
	at     int64 // unix nanoseconds of the last refill
}

// maxKeys bounds a shard's buckets; past it, buckets that have refilled are dropped.
const maxKeys = 1 << 14

// New returns a limiter of rate r; now is the clock (nil: time.Now).
func New[K comparable](r Rate, now func() time.Time) *Limiter[K] {
	if now == nil {
		now = time.Now
	}
	l := &Limiter[K]{rate: r, now: now, seed: maphash.MakeSeed()}
	l.share.Store(1)
	for i := range l.shards {
		l.shards[i].buckets = map[K]*bucket{}
	}
	return l
}

// Rate is the limit this limiter enforces across every process.
func (l *Limiter[K]) Rate() Rate { return l.rate }

// SetShare tells the limiter how many processes share its limit (n < 1 counts as 1).
func (l *Limiter[K]) SetShare(n int) {
	if n < 1 {
		n = 1
	}
	l.share.Store(int64(n))
}

// Allow spends one token of key's bucket. When the bucket is empty it
// answers false and how long until a token is back.
func (l *Limiter[K]) Allow(key K) (bool, time.Duration) {
	if l == nil || l.rate.Off() {
		return true, 0
	}
	n := float64(l.share.Load())
	capacity := float64(l.rate.N) / n
	if capacity < 1 {
		capacity = 1
	}
	perToken := float64(l.rate.Per) * n / float64(l.rate.N) // nanoseconds to regain one token
	now := l.now().UnixNano()
	sh := &l.shards[maphash.Comparable(l.seed, key)%uint64(len(l.shards))]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	b := sh.buckets[key]
	if b == nil {
		if len(sh.buckets) >= maxKeys {
			sh.sweep(now, capacity, perToken)
		}
		b = &bucket{tokens: capacity, at: now}
		sh.buckets[key] = b
	} else if elapsed := now - b.at; elapsed > 0 {
		b.tokens += float64(elapsed) / perToken
		if b.tokens > capacity {
			b.tokens = capacity
		}
		b.at = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) * perToken)
}

// sweep drops the buckets that would be full by now (they hold no state a
// fresh bucket would not), and if that frees nothing, every bucket.
func (sh *shard[K]) sweep(now int64, capacity, perToken float64) {
	for k, b := range sh.buckets {
		if b.tokens+float64(now-b.at)/perToken >= capacity {
			delete(sh.buckets, k)
		}
	}
	if len(sh.buckets) >= maxKeys {
		clear(sh.buckets)
	}
}

// Len is how many keys the limiter holds state for.
func (l *Limiter[K]) Len() int {
	n := 0
	for i := range l.shards {
		l.shards[i].mu.Lock()
		n += len(l.shards[i].buckets)
		l.shards[i].mu.Unlock()
	}
	return n
}

// Share is the number of processes the limit is divided among.
func (l *Limiter[K]) Share() int { return int(l.share.Load()) }
