package sale

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/rdb"
)

// One hot item across several Redis shards: goods may split its stock into
// K buckets (model.Goods.Shards, default 1, at most model.GoodsShards.Max of
// the one limits table), each a full set of the goods' keys (scriptKeys)
// under its own hash tag, so each lands on its own cluster node (bucketTag).
// Bucket 0 keeps {goods:ID}, so goods of one bucket (and every goods loaded
// before buckets) is as it was.
//
// A shopper's home bucket is HomeBucket(user, K), where engine.go routes
// their grabs: every order of the user lives there, with the user's limit
// mark (held) and list (mine), so the per-user limit is decided in one
// script as with one bucket, and pay, cancel, refund and expiry each touch
// one bucket, the one the order ID names (the sequence's bucket: seq /
// BucketSeqSpan). Stock is split in unit ranges:
// bucket b sells units base_b+1 .. base_b+n_b, n_b = ⌊stock/K⌋ (+1 for the
// first stock%K buckets), so a unit number is never sold by two buckets.
//
// A grab is one round trip while the home bucket has stock. When it has
// none the script answers dry; the grab then takes a unit from another
// bucket (stealScript, one trip) and runs the grab script again at home with
// that unit (one more trip): the unit goes into home's free list first, so a
// refusal there (limit, window) keeps it on sale. Buckets found empty are
// remembered for dryFor, so once the goods is sold out a grab costs one trip.

// BucketSeqSpan splits a goods' order sequences between its buckets: bucket b
// numbers its orders from b*BucketSeqSpan+1, so an order ID names its bucket
// and bucket 0's numbers (every order before buckets) are unchanged.
const BucketSeqSpan = OrderSeqSpan / 10

// Bucket names one bucket of a goods: bucket n of k.
type Bucket struct {
	Goods int64
	N, K  int
}

// BucketsOf lists the k buckets of goods id.
func BucketsOf(id int64, k int) []Bucket {
	k = max(k, 1)
	out := make([]Bucket, k)
	for i := range out {
		out[i] = Bucket{Goods: id, N: i, K: k}
	}
	return out
}

// Bucket0 is the goods' first (for one-bucket goods, only) bucket.
func Bucket0(id int64) Bucket { return Bucket{Goods: id, K: 1} }

// BucketOfSeq is the bucket an order sequence belongs to.
func BucketOfSeq(id, seq int64, k int) Bucket {
	return Bucket{Goods: id, N: int(seq / BucketSeqSpan), K: max(k, 1)}
}

// bucketSize is how many units bucket b of k holds of stock, and the base
// its units are numbered from.
func bucketSize(stock int64, b, k int) (n, base int64) {
	q, r := stock/int64(k), stock%int64(k)
	n = q
	if int64(b) < r {
		n++
	}
	base = int64(b)*q + min(int64(b), r)
	return n, base
}

var tagCache sync.Map // bucket → its hash tag

// Tag is the bucket's hash tag: {goods:ID} for bucket 0, and for bucket b
// of k the first {goods:ID:n} (n = 1, 2, ...) whose cluster slot lies in the
// b-th k-th of the slot space counted from bucket 0's: with the slots split
// evenly over k nodes (as redis-cli --cluster create does) each bucket is on
// its own node. It depends on the goods ID, b and k alone.
func (b Bucket) Tag() string {
	if b.N == 0 {
		return HashTag(b.Goods)
	}
	if t, ok := tagCache.Load(b); ok {
		return t.(string)
	}
	id := strconv.FormatInt(b.Goods, 10)
	s0 := rdb.Slot("goods:" + id)
	part := (s0*b.K/rdb.ClusterSlots + b.N) % b.K
	var t string
	for i := 1; ; i++ {
		t = "goods:" + id + ":" + strconv.Itoa(i)
		if rdb.Slot(t)*b.K/rdb.ClusterSlots == part {
			break
		}
	}
	t = "{" + t + "}"
	tagCache.Store(b, t)
	return t
}

// shardsTTL is how long a process trusts the bucket count it read: K changes
// only before the sale starts (and the grab script refuses a grab made with
// a stale K), so only figures read before the start can be stale, this long.
const shardsTTL = 2 * time.Second

type shardsEntry struct {
	k      int
	read   time.Time
	absent bool         // the goods was not in Redis: 1 for a grab (its script checks), never for a read of its stock
	keys   []bucketKeys // each bucket's keys, made once per count (engine.go: decideKeys)
}

// usable reports whether the entry answers a caller that takes any age
// (stale) or only a fresh count read from loaded goods.
func (e shardsEntry) usable(stale bool, now time.Time) bool {
	return stale || (!e.absent && now.Sub(e.read) < shardsTTL)
}

// shardsCache remembers each goods' bucket count, from bucket 0's info.
type shardsCache struct{ m sync.Map }

func (c *shardsCache) forget(id int64) { c.m.Delete(id) }

// ShardsOf returns the bucket count of each goods, from memory while fresh
// (any age when stale is true: the grab script checks it), else from bucket
// 0's info in one pipelined round trip; goods not in Redis have 1, which
// only a stale caller takes from memory.
func (s *Sale) ShardsOf(ctx context.Context, stale bool, ids ...int64) (map[int64]int, error) {
	out := make(map[int64]int, len(ids))
	var missing []int64
	now := time.Now()
	for _, id := range ids {
		if v, ok := s.shards.m.Load(id); ok && v.(shardsEntry).usable(stale, now) {
			out[id] = v.(shardsEntry).k
		} else {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	pipe := s.Redis.Pipeline()
	cmds := make([]*redis.StringCmd, len(missing))
	for i, id := range missing {
		cmds[i] = pipe.HGet(ctx, InfoKey(Bucket0(id)), "shards")
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read goods shards: %w", err)
	}
	for i, id := range missing {
		k, err := cmds[i].Int()
		if err != nil || k < 1 {
			k = 1
		}
		out[id] = k
		// Goods not in Redis yet is read again by a caller that counts its
		// stock: its load (by any process) may give it several buckets.
		e := shardsEntry{k: k, read: now, absent: err != nil}
		if v, ok := s.shards.m.Load(id); ok && v.(shardsEntry).k == k {
			e.keys = v.(shardsEntry).keys
		} else {
			e.keys = keysOfBuckets(id, k)
		}
		s.shards.m.Store(id, e)
	}
	return out, nil
}

// ShardsOne is shardsOf for one goods.
func (s *Sale) ShardsOne(ctx context.Context, id int64, stale bool) (int, error) {
	if v, ok := s.shards.m.Load(id); ok && v.(shardsEntry).usable(stale, time.Now()) {
		return v.(shardsEntry).k, nil // every grab asks: no map made for one answer
	}
	m, err := s.ShardsOf(ctx, stale, id)
	return m[id], err
}

// BucketsOfGoods lists the buckets of goods id as Redis holds them now.
func (s *Sale) BucketsOfGoods(ctx context.Context, id int64) ([]Bucket, error) {
	k, err := s.ShardsOne(ctx, id, false)
	if err != nil {
		return nil, err
	}
	return BucketsOf(id, k), nil
}

// mend mends what answer code said of bucket home (the grab's home, of the
// goods' bucket count as this process knew it) before the grab is tried
// again, and answers the goods' bucket count to try with: reshard (the
// count changed, before the sale, since it was read: read it again),
// reserve (the bucket issued every order sequence reserved) or moved
// (another node issued them: a failover) - reserve the next block
// (seq_blocks.go) - and not_loaded (the goods is missing from Redis: load
// it, when its sale is live, load.go). attempt counts the grab's tries.
func (s *Sale) mend(ctx context.Context, home Bucket, code string, attempt int) (int, error) {
	switch code {
	case "reshard":
		if attempt > 1 {
			return 0, fmt.Errorf("grab goods %d: its bucket count keeps changing", home.Goods)
		}
	case "reserve", "moved":
		if code == "moved" {
			s.lost(ctx)
		}
		if attempt > 20 { // others took each block reserved since: only with tiny blocks
			return 0, db.Errorf(db.EUNAVAILABLE, "goods %d: order numbers are being reserved; try again shortly", home.Goods)
		}
		if err := s.extendSeqs(ctx, home); err != nil {
			return 0, err
		}
		return home.K, nil
	case "not_loaded":
		if attempt > 0 {
			return 0, fmt.Errorf("grab goods %d: still not loaded after loading", home.Goods)
		}
		if err := s.loadLive(ctx, home); err != nil {
			return 0, err
		}
	}
	s.shards.forget(home.Goods)
	return s.ShardsOne(ctx, home.Goods, false)
}

// stealScript takes one unit from a bucket for a grab whose home bucket has
// none: a unit given back first, else a fresh one. Outside the sale's
// window (the merchant ended it, bucket by bucket) it takes none.
//
// KEYS: ScriptKeys (of the bucket)
// ARGV: 1 now ms
// Returns "unit:remaining:slot:version", or empty | hidden | ended | not_started.
var stealScript = redis.NewScript(GoodsLua + `
local w = redis.call('HMGET', K_INFO, 'start', 'end', 'hidden')
if not w[1] then return 'empty' end
if w[3] == '1' then return 'hidden' end
if tonumber(ARGV[1]) >= tonumber(w[2]) then return 'ended' end
if tonumber(ARGV[1]) < tonumber(w[1]) then return 'not_started' end
local unit = redis.call('RPOP', K_FREE)
if not unit then
	local n = tonumber(redis.call('GET', K_FRESH)) or 0
	if n <= 0 then return 'empty' end
	redis.call('DECR', K_FRESH)
	unit = tostring(n + (tonumber(redis.call('HGET', K_INFO, 'base')) or 0))
end
return unit .. ':' .. remaining() .. ':' .. (redis.call('HGET', K_INFO, 'slot') or '0') .. ':' .. version()
`)

// elsewhere goes on with a grab whose home bucket had no stock: it takes a
// unit from the next bucket that has one (stealScript, one round trip
// each; buckets found empty lately are tried last) and decides the grab
// at home again with it (decideScript, alone). It answers as decideScript
// does; sold_out when no bucket had a unit. Sold out is never answered
// from the memo of empty buckets alone: a unit another grab brought to a
// bucket and could not use (its user's limit) is on sale there, even when
// this process marked the bucket empty a moment before, so every bucket is
// asked before sold_out, and home once more when any was empty. (Once sold
// out, refusals.go answers from memory without these trips.)
func (s *Sale) elsewhere(ctx context.Context, home Bucket, g Grab, now time.Time) (decided, error) {
	s.dry.mark(home)
	var others, later []Bucket
	for i := 1; i < home.K; i++ {
		b := Bucket{Goods: home.Goods, N: (home.N + i) % home.K, K: home.K}
		if s.dry.dry(b) {
			later = append(later, b)
		} else {
			others = append(others, b)
		}
	}
	probed := false
	for _, b := range append(others, later...) {
		res, err := s.Eval(ctx, stealScript, ScriptKeys(b), now.UnixMilli()).Text()
		s.trips.count(home.Goods).trips.Add(1)
		if err != nil {
			return decided{}, fmt.Errorf("take a unit from bucket %d: %w", b.N, err)
		}
		switch res {
		case "empty":
			s.dry.mark(b)
			probed = true
			continue
		case "ended", "not_started", "hidden":
			return s.keepRefusal(ctx, home, g, res)
		}
		f := strings.SplitN(res, ":", 4)
		if len(f) != 4 {
			return decided{}, fmt.Errorf("unreadable answer %q of bucket %d", res, b.N)
		}
		remaining, _ := strconv.ParseInt(f[1], 10, 64)
		slot, _ := strconv.ParseInt(f[2], 10, 64)
		version, _ := strconv.ParseInt(f[3], 10, 64)
		s.PushStock(b, slot, remaining, version)
		d, err := s.decideAlone(ctx, home, g, now, f[0])
		if err != nil {
			// The unit may be lost with the reply: stock short by one, never sold twice.
			return decided{}, fmt.Errorf("with a unit of bucket %d: %w", b.N, err)
		}
		if d.Code != "ok" { // refused: the unit stays on sale in the home bucket
			s.dry.clear(home)
			s.SaleChanged(ctx, home.Goods)
		}
		return d, nil
	}
	if probed {
		if d, err := s.decideAlone(ctx, home, g, now, ""); err != nil || d.Code != "dry" {
			return d, err
		}
	}
	return s.keepRefusal(ctx, home, g, "sold_out")
}

// keepRefusal answers a refusal elsewhere found, kept first under a keyed
// grab's memo key in its home bucket as decideScript keeps a final refusal
// (a bare word: the call's answer), so the key's retry is answered the
// same even once a unit is back: a key's first answer is its answer.
func (s *Sale) keepRefusal(ctx context.Context, home Bucket, g Grab, code string) (decided, error) {
	if g.Request != "" {
		if err := s.Redis.SetNX(ctx, MemoKey(home, g.Request), code, grabMemoTTL).Err(); err != nil {
			return decided{}, fmt.Errorf("keep the answer %s of request %s: %w", code, g.Request, err)
		}
	}
	return decided{Code: code}, nil
}

// trips counts, per goods with several buckets, the grabs and their round
// trips to Redis, for the bench: a grab served by its home bucket makes one.
type trips struct{ of sync.Map } // goods ID → *tripCount

type tripCount struct{ grabs, trips atomic.Int64 }

func (t *trips) count(goodsID int64) *tripCount {
	if c, ok := t.of.Load(goodsID); ok {
		return c.(*tripCount)
	}
	c, _ := t.of.LoadOrStore(goodsID, new(tripCount))
	return c.(*tripCount)
}

// countTrip counts a script round trip of goods of several buckets, and
// the grabs it decided when they are first tries (not a unit brought).
func (s *Sale) countTrip(goodsID int64, first bool, grabs int) {
	c := s.trips.count(goodsID)
	if first {
		c.grabs.Add(int64(grabs))
	}
	c.trips.Add(1)
}

// GrabTrips reports how many grabs of the goods (when it has several
// buckets) this service ran and how many script round trips they made.
func (s *Sale) GrabTrips(goodsID int64) (grabs, roundTrips int64) {
	c := s.trips.count(goodsID)
	return c.grabs.Load(), c.trips.Load()
}

// dryFor is how long a bucket found without stock is passed over by the
// grabs of other buckets' shoppers: units come back to a bucket only when
// one of its orders ends, and its own shoppers find them at once.
const dryFor = time.Second

// dryBuckets remembers buckets found without stock.
type dryBuckets struct{ m sync.Map } // bucket → time.Time until which it is passed over

func (d *dryBuckets) mark(b Bucket)  { d.m.Store(b, time.Now().Add(dryFor)) }
func (d *dryBuckets) clear(b Bucket) { d.m.Delete(b) }
func (d *dryBuckets) dry(b Bucket) bool {
	v, ok := d.m.Load(b)
	return ok && time.Now().Before(v.(time.Time))
}

// stockSums keeps, per goods of several buckets, each bucket's remaining
// stock as this process last saw it, so a stock event can carry the goods'
// total. A bucket's figures only move forward (a higher version); the
// event's version is the newest of them, raised past the last one sent, so
// the events this process sends only move forward too.
type stockSums struct {
	mu sync.Mutex
	of map[int64]*goodsStock
}

type goodsStock struct {
	remaining, version []int64 // per bucket; version 0: not seen yet
	sent               int64   // the last event's version
}

// add records bucket b's remaining at version and answers the goods' total
// and the event's version; buckets not seen yet are read with read (once).
// ok is false when they could not be read, or when the bucket's state is
// one this process holds already (a refusal's answer after the change it
// saw was told): nothing new to tell.
func (t *stockSums) add(b Bucket, remaining, version int64, read func(Bucket) (int64, bool)) (total, v int64, ok bool) {
	t.mu.Lock()
	if t.of == nil {
		t.of = map[int64]*goodsStock{}
	}
	g := t.of[b.Goods]
	if g == nil || len(g.remaining) != b.K {
		g = &goodsStock{remaining: make([]int64, b.K), version: make([]int64, b.K)}
		t.of[b.Goods] = g
	}
	newer := version > g.version[b.N]
	if newer {
		g.remaining[b.N], g.version[b.N] = remaining, version
	}
	var unseen []int
	for i, ver := range g.version {
		if ver == 0 {
			unseen = append(unseen, i)
		}
	}
	t.mu.Unlock()
	if !newer && len(unseen) == 0 {
		return 0, 0, false
	}
	for _, i := range unseen {
		n, ok := read(Bucket{Goods: b.Goods, N: i, K: b.K})
		if !ok {
			return 0, 0, false
		}
		t.mu.Lock()
		if g.version[i] == 0 {
			g.remaining[i], g.version[i] = n, 1 // older than any script's version
		}
		t.mu.Unlock()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range g.remaining {
		total += g.remaining[i]
		v = max(v, g.version[i])
	}
	v = max(v, g.sent+1)
	g.sent = v
	return total, v, true
}

// bucketRemaining reads one bucket's remaining stock.
func (s *Sale) bucketRemaining(b Bucket) (int64, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	pipe := s.Redis.Pipeline()
	fresh, free := pipe.Get(ctx, FreshKey(b)), pipe.LLen(ctx, FreeKey(b))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		s.Log.Warn("read a bucket's stock", "goods", b.Goods, "bucket", b.N, "err", err)
		return 0, false
	}
	n, _ := fresh.Int64()
	return n + free.Val(), true
}
