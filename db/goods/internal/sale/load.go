package sale

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/model"
)

// GoodsLua is the prelude of every goods script: names for the keys of
// scriptKeys and helpers over order records.
//
// An order record is its fields joined by "|" (record.go lists them; the
// scripts name each by its place, F_SEQ, F_USER, ...): a grab writes
// seq|user|unit|amount|status|created|expires|version|updated (times in unix
// ms), a failed order adds the failure (model.FailureSoldTwice or
// model.FailureRefundDue), and a paid one also the discount in cents, the
// user coupon ID (0: none) and the paid time. Scripts join a record with
// orderRecord. The same string goes to the flush queue on each change.
//
// Every script returns one string: a status word ("sold_out"), or for an
// answer about an order the word, the goods' remaining stock, its slot ID,
// the stock's version and the order record, joined by colons
// ("ok:41:7:1764550000123456:<record>"); parseAnswer reads them. The version
// is Redis's clock (microseconds) when the answer was made: answers about one
// goods come from its one node, so a later version is a later state, whatever
// order the answers reach their callers and the watchers in.
var GoodsLua = orderLua + `
local K_INFO, K_FRESH, K_FREE, K_HELD, K_SEQ = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local K_ORDERS, K_MINE, K_DEADLINES, K_PENDING, K_COUNTS = KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]

local function remaining()
	return (tonumber(redis.call('GET', K_FRESH)) or 0) + redis.call('LLEN', K_FREE)
end

-- version is Redis's clock in microseconds: the stock's version in an answer.
local function version()
	local t = redis.call('TIME')
	return t[1] .. string.format('%06d', tonumber(t[2]))
end

-- answer is a script's reply about one order: "word:remaining:slot:version:record".
local function answer(word, rec)
	return word .. ':' .. remaining() .. ':' .. (redis.call('HGET', K_INFO, 'slot') or '0') .. ':' .. version() .. ':' .. rec
end

-- replayed is a remembered answer given back to a keyed retry
-- (db.MemoizeReplay): an answer about an order says the stock and its
-- version as they are now, never the first run's, so a watcher who heard
-- of later changes is not sent back to an older figure.
local function replayed(res)
	if type(res) ~= 'string' then return res end
	local word, tail = string.match(res, '^([^:]*):[^:]*:[^:]*:(.*)$')
	if not word then return res end
	return answer(word, string.match(tail, '([^:]*)$'))
end

-- addCount adds n to one of the goods' counts, skipping a zero: Lua
-- writes a negated zero as "-0", which HINCRBY refuses.
local function addCount(name, n)
	if n ~= 0 then redis.call('HINCRBY', K_COUNTS, name, n) end
end

-- node is the cluster node that runs the script (CLUSTER MYID), when
-- cluster is '1'; '' otherwise. A bucket remembers the node that issued
-- its sequences (info 'node'; seq_blocks.go).
local function node(cluster)
	if cluster ~= '1' then return '' end
	local id = redis.pcall('CLUSTER', 'MYID')
	if type(id) == 'string' then return id end
	return ''
end

local split = orderFields -- an order record's fields, by place (F_SEQ, ...)

-- saleInfo reads the bucket's sale (start, end, price, limit, slot, shards,
-- base, hidden, ceil, node) for a grab or a batch of grabs, or the word the
-- whole call is answered with: not_loaded, moved (another node issued the
-- bucket's sequences, a failover: the rest of its block is skipped, see
-- seq_blocks.go), reshard (the bucket count is not the caller's) or hidden.
local function saleInfo(cluster, shards)
	local info = redis.call('HMGET', K_INFO, 'start', 'end', 'price', 'limit', 'slot', 'shards', 'base', 'hidden', 'ceil', 'node')
	if not info[1] then return nil, 'not_loaded' end
	local here = node(cluster)
	if here ~= info[10] and here ~= '' then
		redis.call('HSET', K_INFO, 'node', here)
		if info[10] and info[10] ~= '' and info[9] then
			if (tonumber(redis.call('GET', K_SEQ)) or 0) < tonumber(info[9]) then redis.call('SET', K_SEQ, info[9]) end
			return nil, 'moved'
		end
	end
	if (tonumber(info[6]) or 1) ~= tonumber(shards) then return nil, 'reshard' end
	if info[8] == '1' then return nil, 'hidden' end
	return info
end

-- order reads the order at sequence seq: its record and fields, or nil
-- when there is none or, given uid, it is another user's.
local function order(seq, uid)
	local rec = redis.call('HGET', K_ORDERS, seq)
	if not rec then return nil end
	local f = split(rec)
	if uid and f[F_USER] ~= uid then return nil end
	return rec, f
end

-- save writes the order's new status, bumps its version and queues it for the flush.
local function save(f, status, now)
	f[F_STATUS] = status
	f[F_VERSION] = tostring(tonumber(f[F_VERSION]) + 1)
	f[F_UPDATED] = now
	local rec = orderRecord(f)
	redis.call('HSET', K_ORDERS, f[F_SEQ], rec)
	redis.call('RPUSH', K_PENDING, rec)
	return rec
end

-- close ends an unpaid order as expired, cancelled or failed: the user's limit
-- mark is cleared and, unless giveBack is false, the unit returns to stock.
local function close(f, status, now, giveBack)
	if giveBack then redis.call('RPUSH', K_FREE, f[F_UNIT]) end
	if redis.call('HINCRBY', K_HELD, f[F_USER], -1) <= 0 then redis.call('HDEL', K_HELD, f[F_USER]) end
	redis.call('HINCRBY', K_INFO, 'back', 1) -- refusals remembered by web processes are stale now: refusals.go
	redis.call('ZREM', K_DEADLINES, f[F_SEQ])
	redis.call('HINCRBY', K_COUNTS, 'unpaid', -1)
	redis.call('HINCRBY', K_COUNTS, status, 1)
	return save(f, status, now)
end
`

// loadScript puts one bucket of goods into Redis unless it is there
// already: a second preheat never resets stock. After a Redis loss it
// rebuilds the bucket from the store's live orders, so no unit they hold is
// sold again.
//
// KEYS: scriptKeys (of the bucket)
// ARGV: 1 start ms, 2 end ms, 3 seckill price, 4 limit, 5 stock, 6 slot ID,
// 7 fresh units, 8 last sequence, then JSON: 9 free units, 10 held marks,
// 11 live order records, 12 mine lists, 13 counts; then 14 the goods'
// bucket count, 15 the base the bucket's fresh units are numbered from, 16
// hidden (hiddenFlag), 17 the ceiling of its order sequences, 18 '1' on a
// Redis Cluster (the bucket records its node: seq_blocks.go)
// Returns loaded, or exists when the goods was loaded already (nothing changed).
var loadScript = redis.NewScript(GoodsLua + `
if redis.call('EXISTS', K_INFO) == 1 then return 'exists' end
redis.call('DEL', K_FRESH, K_FREE, K_HELD, K_ORDERS, K_MINE, K_DEADLINES, K_COUNTS)
redis.call('SET', K_FRESH, ARGV[7])
if (tonumber(redis.call('GET', K_SEQ)) or 0) < tonumber(ARGV[8]) then redis.call('SET', K_SEQ, ARGV[8]) end
for _, unit in ipairs(cjson.decode(ARGV[9])) do redis.call('RPUSH', K_FREE, unit) end
for uid, n in pairs(cjson.decode(ARGV[10])) do redis.call('HSET', K_HELD, uid, n) end
for _, rec in ipairs(cjson.decode(ARGV[11])) do
	local f = split(rec)
	redis.call('HSET', K_ORDERS, f[F_SEQ], rec)
	if f[F_STATUS] == 'unpaid' then redis.call('ZADD', K_DEADLINES, f[F_EXPIRES], f[F_SEQ]) end
end
for uid, seqs in pairs(cjson.decode(ARGV[12])) do redis.call('HSET', K_MINE, uid, seqs) end
for k, n in pairs(cjson.decode(ARGV[13])) do redis.call('HSET', K_COUNTS, k, n) end
redis.call('HSET', K_INFO, 'start', ARGV[1], 'end', ARGV[2], 'price', ARGV[3], 'limit', ARGV[4], 'stock', ARGV[5], 'slot', ARGV[6],
	'shards', ARGV[14], 'base', ARGV[15], 'hidden', ARGV[16], 'ceil', ARGV[17], 'node', node(ARGV[18]))
return 'loaded'
`)

// KeyedGoodsScript is a goods script (body, after GoodsLua) run with an
// Idempotency-Key: its answers that keep says are kept are remembered under
// the last key (db.MemoizeReplay), and one given back again carries the
// stock and its version as they are at the retry, so the stock event a
// retry sends is no older than any sent since the first answer.
func KeyedGoodsScript(body, keep string) *redis.Script {
	return redis.NewScript(GoodsLua + db.MemoizeReplay(body, keep, "res = replayed(res)"))
}

// goodsShards is the goods' bucket count (at least 1).
func goodsShards(g *model.Goods) int { return max(g.Shards, 1) }

// Load loads the goods into Redis once, every bucket, and marks it active;
// it reports whether this call loaded it. Bucket 0 goes last, so goods whose
// bucket 0 is in Redis has all its buckets there.
func (s *Sale) Load(ctx context.Context, g *model.Goods) (bool, error) {
	k := goodsShards(g)
	// After a Redis loss a flusher may still hold a batch of the lost Redis's
	// orders: fenced first, it has committed before the store is read, or
	// never commits (db/backend/lease.go, step 5), so no unit its orders hold
	// is sold again.
	var lanes []backend.FlushQueue
	for _, b := range BucketsOf(g.ID, k) {
		lanes = append(lanes, FlushQueue(b))
	}
	if err := s.FenceLanes(ctx, lanes...); err != nil {
		return false, fmt.Errorf("load goods %d: %w", g.ID, err)
	}
	sts, err := s.rebuildState(ctx, g)
	if err != nil {
		return false, err
	}
	j := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	loaded := false
	for n := k - 1; n >= 0; n-- {
		st, b := sts[n], Bucket{Goods: g.ID, N: n, K: k}
		_, base := bucketSize(g.Stock, n, k)
		// Every sequence up to the ceiling reserved before may have been
		// issued (seq_blocks.go): start above it, under a new block.
		reserved, err := s.reservedSeqs(ctx, b)
		if err != nil {
			return false, fmt.Errorf("load goods %d: %w", g.ID, err)
		}
		st.seq = max(st.seq, reserved)
		ceil, err := s.reserveSeqs(ctx, b, st.seq+s.seqBlock())
		if err != nil {
			return false, fmt.Errorf("load goods %d: %w", g.ID, err)
		}
		args := []any{g.StartAt.UnixMilli(), g.EndAt.UnixMilli(), g.SeckillPriceCents, g.LimitPerUser, g.Stock, g.SlotID,
			st.fresh, st.seq, j(st.free), j(st.held), j(st.records), j(st.mine), j(st.counts), k, base, HiddenFlag(g), ceil, s.ClusterFlag()}
		res, err := loadScript.Run(ctx, s.Redis, ScriptKeys(b), args...).Text()
		if err != nil {
			return false, fmt.Errorf("load goods %d: %w", g.ID, err)
		}
		loaded = res == "loaded"
		if loaded && reserved > 0 { // it was loaded before: Redis lost it, with what was not flushed yet
			s.lost(ctx)
		}
	}
	s.shards.forget(g.ID)
	if err := s.Redis.SAdd(ctx, ActiveKey, g.ID).Err(); err != nil {
		return false, fmt.Errorf("activate goods %d: %w", g.ID, err)
	}
	if loaded {
		s.SaleChanged(ctx, g.ID)
		if _, err := s.SQL.W.ExecContext(ctx, `UPDATE goods SET preheated_ms = COALESCE(preheated_ms, ?) WHERE id = ?`, s.Now().UnixMilli(), g.ID); err != nil {
			return true, err
		}
	}
	return loaded, nil
}

// goodsState is what Redis must hold for goods given the store's orders.
type goodsState struct {
	fresh   int64
	seq     int64
	free    []string
	held    map[string]string
	records []string
	mine    map[string]string
	counts  map[string]string
}

// rebuildState derives each bucket's Redis state from the store: for new
// goods all of a bucket's stock is fresh; otherwise units held by live orders
// (of any bucket) stay taken, and each order goes back to the bucket its
// sequence names.
func (s *Sale) rebuildState(ctx context.Context, g *model.Goods) ([]*goodsState, error) {
	k := goodsShards(g)
	sts := make([]*goodsState, k)
	for n := range sts {
		fresh, _ := bucketSize(g.Stock, n, k)
		sts[n] = &goodsState{fresh: fresh, seq: int64(n) * BucketSeqSpan, free: []string{}, held: map[string]string{},
			records: []string{}, mine: map[string]string{}, counts: map[string]string{}}
	}
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT id, user_id, unit, amount_cents, status, created_ms, expires_ms, version, updated_ms,
			discount_cents, user_coupon_id, paid_at_ms
		FROM orders WHERE goods_id = ? AND status IN ('unpaid', 'paid') ORDER BY id`, g.ID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	taken := map[int64]bool{}
	held := make([]map[int64]int, k)
	mine := make([]map[int64][]string, k)
	for n := range k {
		held[n], mine[n] = map[int64]int{}, map[int64][]string{}
	}
	for rows.Next() {
		var o model.Order
		var created, expires, updated, discount, coupon, paidAt int64
		if err := rows.Scan(&o.ID, &o.UserID, &o.Unit, &o.AmountCents, &o.Status, &created, &expires, &o.Version, &updated,
			&discount, &coupon, &paidAt); err != nil {
			return nil, err
		}
		_, seq, _ := SplitOrderID(o.ID)
		n := int(seq / BucketSeqSpan)
		if n >= k {
			return nil, fmt.Errorf("goods %d: order %d is of bucket %d of %d", g.ID, o.ID, n, k)
		}
		r := orderRec{Seq: seq, User: o.UserID, Unit: o.Unit, Amount: o.AmountCents, Status: o.Status,
			Created: created, Expires: expires, Version: o.Version, Updated: updated}
		if o.Status == model.OrderPaid {
			r.Discount, r.Coupon, r.PaidAt = discount, coupon, paidAt
			if paidAt == 0 {
				r.PaidAt = updated
			}
		}
		sts[n].records = append(sts[n].records, r.encode())
		taken[o.Unit] = true
		held[n][o.UserID]++
		mine[n][o.UserID] = append(mine[n][o.UserID], fmt.Sprint(seq))
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for n, st := range sts {
		for uid, c := range held[n] {
			st.held[fmt.Sprint(uid)] = fmt.Sprint(c)
		}
		for uid, seqs := range mine[n] {
			st.mine[fmt.Sprint(uid)] = strings.Join(seqs, ",")
		}
		if len(taken) == 0 {
			continue
		}
		// The bucket's units are base+1 .. base+size: fresh below the lowest taken, free the untaken above.
		size, base := bucketSize(g.Stock, n, k)
		low := size + 1
		for u := range taken {
			if u > base && u <= base+size {
				low = min(low, u-base)
			}
		}
		st.fresh = max(low-1, 0)
		for u := base + size; u > base+st.fresh; u-- {
			if !taken[u] {
				st.free = append(st.free, strconv.FormatInt(u, 10))
			}
		}
	}
	for n, st := range sts {
		lo, hi := bucketIDs(g.ID, n)
		var maxID sql.NullInt64
		if err := s.SQL.R.QueryRowContext(ctx, `SELECT MAX(id) FROM (SELECT id FROM orders WHERE goods_id = ?1 AND id BETWEEN ?2 AND ?3
				UNION ALL SELECT id FROM order_conflicts WHERE goods_id = ?1 AND id BETWEEN ?2 AND ?3) AS ids`, g.ID, lo, hi).Scan(&maxID); err != nil {
			return nil, err
		}
		if maxID.Valid {
			_, st.seq, _ = SplitOrderID(maxID.Int64)
		}
		c, err := s.DurableCountsOf(ctx, g.ID, lo, hi)
		if err != nil {
			return nil, err
		}
		for name, v := range map[string]int64{model.OrderUnpaid: c.Unpaid, model.OrderPaid: c.Paid, model.OrderExpired: c.Expired,
			model.OrderCancelled: c.Cancelled, model.OrderFailed: c.Failed, "revenue": c.RevenueCents, "discount": c.DiscountCents} {
			if v != 0 {
				st.counts[name] = fmt.Sprint(v)
			}
		}
	}
	return sts, nil
}

// bucketIDs is the range of order IDs bucket n of the goods numbers.
func bucketIDs(goodsID int64, n int) (lo, hi int64) {
	lo = OrderID(goodsID, int64(n)*BucketSeqSpan)
	return lo, lo + BucketSeqSpan - 1
}

// refreshScript gives loaded goods new terms (window, price, limit,
// stock) before its sale starts; no unit can have been sold yet, so the stock
// is set afresh.
//
// With ARGV[7] "unload" it instead removes the bucket (the goods' bucket
// count changed: it is loaded again in the new layout).
//
// KEYS: scriptKeys (of the bucket)
// ARGV: 1 now ms, 2 start ms, 3 end ms, 4 seckill price, 5 limit, 6 the
// goods' stock, 7 the bucket's fresh units (or unload), 8 its base, 9
// hidden (hiddenFlag)
// Returns ok when changed, not_loaded when the bucket is not in Redis, or
// started when the sale has begun (nothing changed).
var refreshScript = redis.NewScript(GoodsLua + `
if redis.call('EXISTS', K_INFO) == 0 then return 'not_loaded' end
if tonumber(ARGV[1]) >= tonumber(redis.call('HGET', K_INFO, 'start')) or redis.call('HLEN', K_ORDERS) > 0 then return 'started' end
if ARGV[7] == 'unload' then
	redis.call('DEL', K_INFO, K_FRESH, K_FREE, K_HELD, K_SEQ, K_ORDERS, K_MINE, K_DEADLINES, K_COUNTS)
	return 'ok'
end
redis.call('HSET', K_INFO, 'start', ARGV[2], 'end', ARGV[3], 'price', ARGV[4], 'limit', ARGV[5], 'stock', ARGV[6], 'base', ARGV[8], 'hidden', ARGV[9])
redis.call('SET', K_FRESH, ARGV[7])
redis.call('DEL', K_FREE)
redis.call('HINCRBY', K_INFO, 'back', 1) -- see refusals.go
return 'ok'
`)

// Refresh brings Redis in line with goods whose terms or window changed
// before the sale, loading it when it is now due. Goods whose bucket count
// changed is taken out of Redis and loaded again.
func (s *Sale) Refresh(ctx context.Context, g *model.Goods) error {
	defer s.SaleChanged(ctx, g.ID) // new terms or window: what processes remember of the sale is stale
	s.shards.forget(g.ID)
	old, err := s.ShardsOne(ctx, g.ID, false)
	if err != nil {
		return err
	}
	k := goodsShards(g)
	res, layout := "", k
	if old != k {
		layout = old // unloaded, bucket 0 last: while it is there the old layout is whole
	}
	for n := layout - 1; n >= 0; n-- {
		fresh, base := bucketSize(g.Stock, n, k)
		args := []any{s.Now().UnixMilli(), g.StartAt.UnixMilli(), g.EndAt.UnixMilli(), g.SeckillPriceCents, g.LimitPerUser, g.Stock, fresh, base, HiddenFlag(g)}
		if old != k {
			args[6] = "unload"
		}
		if res, err = refreshScript.Run(ctx, s.Redis, ScriptKeys(Bucket{Goods: g.ID, N: n, K: layout}), args...).Text(); err != nil {
			return fmt.Errorf("refresh goods %d: %w", g.ID, err)
		}
		if res == "started" {
			return db.Errorf(db.ECONFLICT, "the sale of goods %d has started", g.ID)
		}
	}
	if old != k {
		s.shards.forget(g.ID)
		res = "not_loaded"
	}
	if res == "not_loaded" && PreheatDue(s.Now(), g.StartAt, g.EndAt) {
		_, err = s.Load(ctx, g)
		return err
	}
	return nil
}

// Preheat loads every goods whose slot opens within PreheatWindow into
// Redis. Goods already there are left alone, so running it again (or in two
// workers at once) never resets stock. It returns how many goods it loaded.
func (s *Sale) Preheat(ctx context.Context) (int, error) {
	now := s.Now().UnixMilli()
	gs, err := s.queryGoods(ctx, `s.start_ms <= ? AND s.end_ms > ? ORDER BY g.id`, now+PreheatWindow.Milliseconds(), now)
	if err != nil || len(gs) == 0 {
		return 0, err
	}
	pipe := s.Redis.Pipeline()
	exists := make([]*redis.IntCmd, len(gs))
	ids := make([]any, len(gs))
	for i := range gs {
		exists[i] = pipe.Exists(ctx, InfoKey(Bucket0(gs[i].ID)))
		ids[i] = gs[i].ID
	}
	// Re-adding every due goods heals a load whose activation was lost.
	pipe.SAdd(ctx, ActiveKey, ids...)
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, fmt.Errorf("preheat: %w", err)
	}
	loaded := 0
	for i := range gs {
		if exists[i].Val() == 1 {
			continue
		}
		ok, err := s.Load(ctx, &gs[i])
		if err != nil {
			return loaded, err
		}
		if ok {
			loaded++
		}
	}
	return loaded, nil
}

// ActiveGoods lists the goods IDs in the active set, in order.
func (s *Sale) ActiveGoods(ctx context.Context) ([]int64, error) {
	members, err := s.Redis.SMembers(ctx, ActiveKey).Result()
	if err != nil {
		return nil, err
	}
	ids := make([]int64, 0, len(members))
	for _, m := range members {
		if id, err := strconv.ParseInt(m, 10, 64); err == nil {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

// loadLive loads goods a grab found missing from Redis, when its sale is
// live; the only SQL a grab can meet, and only after a missed preheat or a
// Redis that lost its data. The grabs of one goods share one load, so a spike
// that finds the goods missing meets the store once, not once per grab; the load
// ignores the first grab's cancellation, which would fail all of them.
//
// b is the bucket found missing: with several buckets on a cluster one node
// may lose its bucket alone; the load then rebuilds the buckets missing.
func (s *Sale) loadLive(ctx context.Context, b Bucket) error {
	if s.liveLoads == nil {
		return s.loadLiveOnce(ctx, b)
	}
	_, err, _ := s.liveLoads.Do(strconv.FormatInt(b.Goods, 10), func() (any, error) {
		return nil, s.loadLiveOnce(context.WithoutCancel(ctx), b)
	})
	return err
}

// loadLiveOnce is one load of loadLive. A grab that saw the goods
// missing may get here just after another's load ended; it finds the goods
// loaded and reads nothing from the store.
func (s *Sale) loadLiveOnce(ctx context.Context, b Bucket) error {
	goodsID := b.Goods
	n, err := s.Redis.Exists(ctx, InfoKey(b)).Result()
	if err != nil {
		return fmt.Errorf("load goods %d: %w", goodsID, err)
	}
	if n == 1 {
		return nil
	}
	if s.onLiveLoad != nil {
		s.onLiveLoad(goodsID)
	}
	g, err := s.GoodsRow(ctx, goodsID)
	if err != nil {
		return err
	}
	switch g.State {
	case model.SlotUpcoming:
		return db.ErrNotStarted
	case model.SlotEnded:
		return db.ErrEnded
	}
	_, err = s.Load(ctx, g)
	return err
}
