package goods

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/rdb"
)

// StockEvent is the live event for a goods' remaining stock.
type StockEvent struct {
	Type      string `json:"type"` // "stock"
	GoodsID   int64  `json:"goods_id"`
	Remaining int64  `json:"remaining"`
	// Version orders the goods' stock events (Redis's clock when the stock
	// was read): watchers keep the highest, so events that reach them out of
	// order, or from two web processes, never move the stock back.
	Version int64 `json:"version"`
}

// OrderEvent is the live event a user gets on each change of one of their orders.
type OrderEvent struct {
	Type  string       `json:"type"` // "order"
	Order *model.Order `json:"order"`
}

// parseOrderRecord reads a record written by the goods scripts (see goodsLua).
func parseOrderRecord(goodsID int64, rec string) (*model.Order, error) {
	f := strings.Split(rec, "|")
	if len(f) != 9 && len(f) != 10 && len(f) != 13 {
		return nil, fmt.Errorf("order record %q of goods %d: want 9, 10 or 13 fields", rec, goodsID)
	}
	n := make([]int64, 9)
	for _, i := range []int{0, 1, 2, 3, 5, 6, 7, 8} {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("order record %q of goods %d: field %d: %w", rec, goodsID, i+1, err)
		}
		n[i] = v
	}
	o := &model.Order{
		ID: OrderID(goodsID, n[0]), GoodsID: goodsID, UserID: n[1], Unit: n[2], AmountCents: n[3], Status: f[4],
		CreatedAt: msTime(n[5]), ExpiresAt: msTime(n[6]), Version: n[7], UpdatedAt: msTime(n[8]),
	}
	if len(f) >= 10 {
		o.Failure = f[9]
	}
	var paidAt int64
	if len(f) == 13 {
		var err error
		for i, p := range []*int64{&o.DiscountCents, &o.UserCouponID, &paidAt} {
			if *p, err = strconv.ParseInt(f[10+i], 10, 64); err != nil {
				return nil, fmt.Errorf("order record %q of goods %d: field %d: %w", rec, goodsID, 11+i, err)
			}
		}
	}
	fillPaid(o, paidAt, 0)
	return o, nil
}

// fillPaid sets what an order paid and when from its status: a paid,
// refunded or refund-due order paid its amount less the discount, at paidAt
// (0: an order paid before checkout kept the time, its last update);
// a refunded one was refunded at refundedAt (0: its last update).
func fillPaid(o *model.Order, paidAt, refundedAt int64) {
	if o.Status != model.OrderPaid && o.Status != model.OrderRefunded && o.Failure != model.FailureRefundDue {
		o.DiscountCents, o.UserCouponID = 0, 0
		return
	}
	o.PaidCents = o.AmountCents - o.DiscountCents
	at := o.UpdatedAt
	if paidAt > 0 {
		at = msTime(paidAt)
	}
	o.PaidAt = &at
	if o.Status == model.OrderRefunded {
		r := o.UpdatedAt
		if refundedAt > 0 {
			r = msTime(refundedAt)
		}
		o.RefundedAt = &r
	}
}

// answer is a goods script's reply (see goodsLua): a status word and, for an
// answer about an order, the remaining stock, the slot ID, the stock's
// version and the record.
type answer struct {
	code                     string
	remaining, slot, version int64
	rec                      string
}

// parseAnswer reads a script's reply, "word" or "word:remaining:slot:version:record".
func parseAnswer(goodsID int64, reply string) (answer, error) {
	code, rest, about := strings.Cut(reply, ":")
	if !about {
		return answer{code: code}, nil
	}
	// Built only when needed: a win reads an answer on every request.
	bad := func() error { return fmt.Errorf("goods %d: unreadable script answer %q", goodsID, reply) }
	remaining, rest, _ := strings.Cut(rest, ":")
	slot, rec, ok := strings.Cut(rest, ":")
	if !ok {
		return answer{}, bad()
	}
	a := answer{code: code, rec: rec}
	// The version sits before the record; an answer remembered by a release
	// without it (a memo of at most grabMemoTTL) has the record right there.
	if v, r, found := strings.Cut(rec, ":"); found && !strings.Contains(v, "|") {
		var err error
		if a.version, err = strconv.ParseInt(v, 10, 64); err != nil {
			return answer{}, bad()
		}
		a.rec = r
	}
	var err1, err2 error
	a.remaining, err1 = strconv.ParseInt(remaining, 10, 64)
	a.slot, err2 = strconv.ParseInt(slot, 10, 64)
	if err1 != nil || err2 != nil {
		return answer{}, bad()
	}
	return a, nil
}

// grabMemoTTL is how long a grab's answer is remembered for retries of the same request.
const grabMemoTTL = 5 * time.Minute

// grabScript decides a grab: the slot window, the per-user limit, the stock
// (a unit given back first, else a fresh one; refused at 0), then records the
// order, the user's limit mark and list, the expiry deadline and the flush
// record. The answer is remembered under the request ID, so when go-redis
// retries a command whose reply was lost the same order comes back.
//
// With several buckets it runs in the user's home bucket (see shards.go):
// its stock is the bucket's, and ARGV[6], when not empty, is a unit taken
// from another bucket for this grab, put in the free list first so it stays
// on sale whatever the answer.
//
// KEYS: scriptKeys (of the home bucket), then 11 the request's memo key
// ARGV: 1 user ID, 2 now ms, 3 expiry ms, 4 the goods' bucket count as the
// caller knows it, 5 a unit brought ("": none), 6 '1' on a Redis Cluster
// (the bucket's node is checked: seq_blocks.go), 7 memo TTL ms (last, as
// db.Memoize takes it)
// Returns "ok:remaining:slot:version:record", or not_loaded | reshard (the
// bucket count is not ARGV[4]) | hidden (its merchant hid it) | not_started
// | ended | limit_reached | reserve (the bucket issued every order sequence
// the store reserved: seq_blocks.go) | moved (another node issued its
// sequences: a failover; the rest of its block is skipped) | sold_out | dry (no stock in this
// bucket, others may have some).
var grabScript = redis.NewScript(goodsLua + grabLua)

const grabLua = `
if ARGV[5] ~= '' then redis.call('RPUSH', K_FREE, ARGV[5]) end
local memo = redis.call('GET', KEYS[11])
if memo then return answer('ok', memo) end
local info = redis.call('HMGET', K_INFO, 'start', 'end', 'price', 'limit', 'slot', 'shards', 'base', 'hidden', 'ceil', 'node')
if not info[1] then return 'not_loaded' end
local here = node(ARGV[6])
if here ~= info[10] and here ~= '' then
	redis.call('HSET', K_INFO, 'node', here)
	if info[10] and info[10] ~= '' and info[9] then -- another node issued these sequences: see seq_blocks.go
		if (tonumber(redis.call('GET', K_SEQ)) or 0) < tonumber(info[9]) then redis.call('SET', K_SEQ, info[9]) end
		return 'moved'
	end
end
local shards = tonumber(info[6]) or 1
if shards ~= tonumber(ARGV[4]) then return 'reshard' end
if info[8] == '1' then return 'hidden' end
local now = tonumber(ARGV[2])
if now < tonumber(info[1]) then return 'not_started' end
if now >= tonumber(info[2]) then return 'ended' end
local uid = ARGV[1]
if (tonumber(redis.call('HGET', K_HELD, uid)) or 0) >= tonumber(info[4]) then return 'limit_reached' end
if info[9] and (tonumber(redis.call('GET', K_SEQ)) or 0) >= tonumber(info[9]) then return 'reserve' end
local unit, left = redis.call('RPOP', K_FREE), nil
if not unit then
	unit = redis.call('GET', K_FRESH)
	if not unit or tonumber(unit) <= 0 then return shards > 1 and 'dry' or 'sold_out' end
	left = redis.call('DECR', K_FRESH) -- the free list is empty, so this is all that is left
	if info[7] then unit = tostring(tonumber(unit) + tonumber(info[7])) end -- the bucket's units start after base
end
local seq = redis.call('INCR', K_SEQ)
local rec = table.concat({seq, uid, unit, info[3], 'unpaid', ARGV[2], ARGV[3], 1, ARGV[2]}, '|')
redis.call('HSET', K_ORDERS, seq, rec)
redis.call('HINCRBY', K_HELD, uid, 1)
local mine = redis.call('HGET', K_MINE, uid)
redis.call('HSET', K_MINE, uid, mine and (mine .. ',' .. seq) or seq)
redis.call('ZADD', K_DEADLINES, ARGV[3], seq)
redis.call('RPUSH', K_PENDING, rec)
redis.call('HINCRBY', K_COUNTS, 'unpaid', 1)
redis.call('SET', KEYS[11], rec, 'PX', ARGV[7])
return 'ok:' .. (left or remaining()) .. ':' .. info[5] .. ':' .. version() .. ':' .. rec
`

// grabScriptKeyed is grabScript for a grab with an Idempotency-Key: every
// answer but not_loaded is kept under KEYS[11] (the keyed request's memo).
var grabScriptKeyed = redis.NewScript(goodsLua + db.Memoize(grabLua, "res ~= 'not_loaded' and res ~= 'reshard' and res ~= 'dry' and res ~= 'reserve' and res ~= 'moved'"))

// stealScript takes one unit from a bucket for a grab whose home bucket has
// none: a unit given back first, else a fresh one. Outside the sale's
// window (the merchant ended it, bucket by bucket) it takes none.
//
// KEYS: scriptKeys (of the bucket)
// ARGV: 1 now ms
// Returns "unit:remaining:slot:version", or empty | hidden | ended | not_started.
var stealScript = redis.NewScript(goodsLua + `
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

// Grab decides a grab in one Redis round trip with no SQL and nothing
// else in Redis: the order's deadline is in the goods' deadlines, where the
// periodic expiry (ExpireDue) finds it.
func (s *Service) Grab(ctx context.Context, userID, goodsID int64) (*model.Order, error) {
	if goodsID <= 0 || goodsID > MaxID {
		return nil, db.Errorf(db.ENOTFOUND, "goods %d not found", goodsID)
	}
	req, keyed := db.KeyedRequestID(ctx, "goods", userID)
	if !keyed {
		req = rdb.NewRequestID()
	}
	return s.grab(ctx, userID, goodsID, req, keyed)
}

// GrabCall is the grab script's call for one request at now: the script,
// its keys (of the user's home bucket, for the bucket count this process
// last read; 1 if none) and its arguments. Grab runs it through the
// pipeliner; the load bench runs it bare (one EVALSHA, no HTTP and no
// follow-up work) as the most a grab could do on the machine.
func (s *Service) GrabCall(userID, goodsID int64, requestID string, now time.Time) (*redis.Script, []string, []any) {
	k := 1
	if v, ok := s.shards.m.Load(goodsID); ok {
		k = v.(shardsEntry).k
	}
	return s.grabCall(userID, goodsID, k, requestID, now)
}

func (s *Service) grabCall(userID, goodsID int64, k int, requestID string, now time.Time) (*redis.Script, []string, []any) {
	home := bucket{goods: goodsID, n: homeBucket(userID, k), k: k}
	return grabScript, scriptKeys(home, memoKey(home, requestID)),
		[]any{userID, now.UnixMilli(), now.Add(s.OrderTTL).UnixMilli(), k, "", s.clusterFlag(), grabMemoTTL.Milliseconds()}
}

// grab runs the grab script under requestID in the user's home bucket;
// goods not in Redis are loaded when their sale is live (a preheat missed or
// Redis was emptied) and tried once more. A home bucket without stock sends
// the grab on to the others (grabElsewhere).
func (s *Service) grab(ctx context.Context, userID, goodsID int64, requestID string, keyed bool) (*model.Order, error) {
	k, err := s.shardsOne(ctx, goodsID, true)
	if err != nil {
		return nil, err
	}
	now := s.Now()
	for attempt := 0; ; attempt++ {
		script, keys, args := s.grabCall(userID, goodsID, k, requestID, now)
		if keyed {
			script = grabScriptKeyed
		}
		res, err := s.Eval(ctx, script, keys, args...).Text()
		if err != nil {
			return nil, fmt.Errorf("grab goods %d: %w", goodsID, err)
		}
		if k > 1 {
			c := s.trips.count(goodsID)
			c.grabs.Add(1)
			c.trips.Add(1)
		}
		if res == "dry" {
			if res, err = s.grabElsewhere(ctx, userID, goodsID, k, script, keys, args); err != nil {
				return nil, err
			}
		}
		a, err := parseAnswer(goodsID, res)
		if err != nil {
			return nil, err
		}
		switch a.code {
		case "ok":
			o, err := parseOrderRecord(goodsID, a.rec)
			if err != nil {
				return nil, err
			}
			s.pushStock(bucketOfSeq(goodsID, o.ID%OrderSeqSpan, k), a.slot, a.remaining, a.version)
			s.pushOrder(o)
			s.acks.add(acked{at: time.Now(), goodsID: goodsID, rec: a.rec})
			return o, nil
		case "reshard": // the goods' bucket count changed (before its sale) since this process read it
			if attempt > 1 {
				return nil, fmt.Errorf("grab goods %d: its bucket count keeps changing", goodsID)
			}
			s.shards.forget(goodsID)
			if k, err = s.shardsOne(ctx, goodsID, false); err != nil {
				return nil, err
			}
		case "reserve", "moved": // the bucket issued every sequence reserved, or another node did: reserve the next block
			if a.code == "moved" {
				s.lost(ctx)
			}
			if attempt > 20 { // others took each block reserved since: only with tiny blocks
				return nil, db.Errorf(db.EUNAVAILABLE, "goods %d: order numbers are being reserved; try again shortly", goodsID)
			}
			if err := s.extendSeqs(ctx, bucket{goods: goodsID, n: homeBucket(userID, k), k: k}); err != nil {
				return nil, err
			}
		case "hidden": // its merchant hid it: not there for shoppers
			return nil, db.Errorf(db.ENOTFOUND, "goods %d not found", goodsID)
		case "not_started":
			return nil, db.ErrNotStarted
		case "ended":
			return nil, db.ErrEnded
		case "limit_reached":
			return nil, db.ErrLimitReached
		case "sold_out":
			return nil, db.ErrSoldOut
		case "not_loaded":
			if attempt > 0 {
				return nil, fmt.Errorf("grab goods %d: still not loaded after loading", goodsID)
			}
			if err := s.loadLive(ctx, bucket{goods: goodsID, n: homeBucket(userID, k), k: k}); err != nil {
				return nil, err
			}
			s.shards.forget(goodsID)
			if k, err = s.shardsOne(ctx, goodsID, false); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("grab goods %d: unexpected answer %q", goodsID, res)
		}
	}
}

// grabElsewhere goes on with a grab whose home bucket (keys, args: the
// grab script's call there) had no stock: it takes a unit from the next
// bucket that has one (one round trip each; buckets found empty lately are
// passed over) and runs the grab script at home again with it. It answers
// as the grab script does; sold_out when no bucket had a unit. When it found
// buckets empty it asks home once more before answering sold_out: a unit
// another grab brought there and could not use (its user's limit) is on sale
// there now.
func (s *Service) grabElsewhere(ctx context.Context, userID, goodsID int64, k int, script *redis.Script, keys []string, args []any) (string, error) {
	home := homeBucket(userID, k)
	s.dry.mark(bucket{goods: goodsID, n: home, k: k})
	probed := false
	for i := 1; i < k; i++ {
		b := bucket{goods: goodsID, n: (home + i) % k, k: k}
		if s.dry.dry(b) {
			continue
		}
		res, err := s.Eval(ctx, stealScript, scriptKeys(b), args[1]).Text()
		s.trips.count(goodsID).trips.Add(1)
		if err != nil {
			return "", fmt.Errorf("grab goods %d: take a unit from bucket %d: %w", goodsID, b.n, err)
		}
		switch res {
		case "empty":
			s.dry.mark(b)
			probed = true
			continue
		case "ended", "not_started", "hidden":
			return res, nil
		}
		f := strings.SplitN(res, ":", 4)
		if len(f) != 4 {
			return "", fmt.Errorf("grab goods %d: unreadable answer %q of bucket %d", goodsID, res, b.n)
		}
		remaining, _ := strconv.ParseInt(f[1], 10, 64)
		slot, _ := strconv.ParseInt(f[2], 10, 64)
		version, _ := strconv.ParseInt(f[3], 10, 64)
		s.pushStock(b, slot, remaining, version)
		with := append([]any(nil), args...)
		with[4] = f[0]
		res, err = s.Eval(ctx, script, keys, with...).Text()
		s.trips.count(goodsID).trips.Add(1)
		if err != nil {
			// The unit may be lost with the reply: stock short by one, never sold twice.
			return "", fmt.Errorf("grab goods %d with a unit of bucket %d: %w", goodsID, b.n, err)
		}
		if !strings.HasPrefix(res, "ok:") { // refused: the unit stays on sale in the home bucket
			s.dry.clear(bucket{goods: goodsID, n: home, k: k})
		}
		return res, nil
	}
	if probed {
		res, err := s.Eval(ctx, script, keys, args...).Text()
		s.trips.count(goodsID).trips.Add(1)
		if err != nil || res != "dry" {
			return res, err
		}
	}
	return "sold_out", nil
}

// loadLive loads goods a grab found missing from Redis, when its sale is
// live; the only SQL a grab can meet, and only after a missed preheat or a
// Redis that lost its data. The grabs of one goods share one load, so a spike
// that finds the goods missing meets the store once, not once per grab; the load
// ignores the first grab's cancellation, which would fail all of them.
//
// b is the bucket found missing: with several buckets on a cluster one node
// may lose its bucket alone; the load then rebuilds the buckets missing.
func (s *Service) loadLive(ctx context.Context, b bucket) error {
	if s.liveLoads == nil {
		return s.loadLiveOnce(ctx, b)
	}
	_, err, _ := s.liveLoads.Do(strconv.FormatInt(b.goods, 10), func() (any, error) {
		return nil, s.loadLiveOnce(context.WithoutCancel(ctx), b)
	})
	return err
}

// loadLiveOnce is one load of loadLive. A grab that saw the goods
// missing may get here just after another's load ended; it finds the goods
// loaded and reads nothing from the store.
func (s *Service) loadLiveOnce(ctx context.Context, b bucket) error {
	goodsID := b.goods
	n, err := s.Redis.Exists(ctx, infoKey(b)).Result()
	if err != nil {
		return fmt.Errorf("load goods %d: %w", goodsID, err)
	}
	if n == 1 {
		return nil
	}
	if s.onLiveLoad != nil {
		s.onLiveLoad(goodsID)
	}
	g, err := s.goodsRow(ctx, goodsID)
	if err != nil {
		return err
	}
	switch g.State {
	case model.SlotUpcoming:
		return db.ErrNotStarted
	case model.SlotEnded:
		return db.ErrEnded
	}
	_, err = s.load(ctx, g)
	return err
}

// payScript pays an unpaid order of the user's. An order past its deadline
// is expired here instead (the expiry tick may not have run yet), so pay and
// expire can never both win.
//
// KEYS: scriptKeys
// ARGV: 1 sequence, 2 user ID, 3 now ms, 4 discount cents (at most the
// amount), 5 user coupon ID (0: none)
// Returns "word:remaining:slot:version:record" where word is ok | unchanged (already
// paid: the record says with which coupon) | expired (expired, cancelled,
// failed or refunded) | lapsed (past its deadline: expired now), or not_found.
// A paid record carries the discount, the coupon and the paid time (fields
// 11–13); revenue counts the amount before the discount, as the store's
// does, and discount the coupons' share of it (net = revenue - discount).
var payScript = redis.NewScript(goodsLua + payLua)

const payLua = `
local rec, f = order(ARGV[1], ARGV[2])
if not rec then return 'not_found' end
if f[5] == 'paid' then return answer('unchanged', rec) end
if f[5] ~= 'unpaid' then return answer('expired', rec) end
if tonumber(ARGV[3]) >= tonumber(f[7]) then return answer('lapsed', close(f, 'expired', ARGV[3], true)) end
redis.call('ZREM', K_DEADLINES, f[1])
redis.call('HINCRBY', K_COUNTS, 'unpaid', -1)
redis.call('HINCRBY', K_COUNTS, 'paid', 1)
redis.call('HINCRBY', K_COUNTS, 'revenue', f[4])
f[10] = f[10] or ''
f[11] = tostring(math.max(0, math.min(tonumber(ARGV[4]), tonumber(f[4]))))
redis.call('HINCRBY', K_COUNTS, 'discount', f[11])
f[12] = ARGV[5]
f[13] = ARGV[3]
return answer('ok', save(f, 'paid', ARGV[3]))
`

// payScriptKeyed is payScript with an Idempotency-Key: KEYS[11] keeps the
// answer, ARGV[4] is its TTL in ms.
var payScriptKeyed = redis.NewScript(goodsLua + db.Memoize(payLua, "true"))

// PayOrder pays the user's order (which takes it off the deadlines). Paying again
// answers the paid order unchanged; an expired or cancelled order is refused.
func (s *Service) PayOrder(ctx context.Context, userID, orderID int64) (*model.Order, error) {
	return s.payOrder(ctx, userID, orderID, s.Now())
}

func (s *Service) payOrder(ctx context.Context, userID, orderID int64, now time.Time) (*model.Order, error) {
	o, code, err := s.runOrderScript(ctx, userID, orderID, payScript, now, 0, 0)
	if err != nil {
		return nil, err
	}
	switch code {
	case "ok", "unchanged", model.OrderPaid:
		return o, nil
	default: // expired, lapsed, or a final status from the store
		return nil, db.ErrExpired
	}
}

// cancelScript cancels an unpaid order of the user's and returns its unit to stock.
//
// KEYS: scriptKeys
// ARGV: 1 sequence, 2 user ID, 3 now ms
// Returns "word:remaining:slot:version:record" where word is ok | unchanged (already
// cancelled) | paid | expired (expired or failed) | lapsed (past its
// deadline: expired now), or not_found.
var cancelScript = redis.NewScript(goodsLua + cancelLua)

const cancelLua = `
local rec, f = order(ARGV[1], ARGV[2])
if not rec then return 'not_found' end
if f[5] == 'cancelled' then return answer('unchanged', rec) end
if f[5] == 'paid' then return answer('paid', rec) end
if f[5] ~= 'unpaid' then return answer('expired', rec) end
if tonumber(ARGV[3]) >= tonumber(f[7]) then return answer('lapsed', close(f, 'expired', ARGV[3], true)) end
return answer('ok', close(f, 'cancelled', ARGV[3], true))
`

// cancelScriptKeyed is cancelScript with an Idempotency-Key: KEYS[11] keeps
// the answer, ARGV[4] is its TTL in ms.
var cancelScriptKeyed = redis.NewScript(goodsLua + db.Memoize(cancelLua, "true"))

// CancelOrder cancels the user's unpaid order and puts its unit back in stock.
func (s *Service) CancelOrder(ctx context.Context, userID, orderID int64) (*model.Order, error) {
	o, code, err := s.runOrderScript(ctx, userID, orderID, cancelScript, s.Now())
	if err != nil {
		return nil, err
	}
	switch code {
	case "ok", "unchanged", model.OrderCancelled:
		return o, nil
	case model.OrderPaid:
		return nil, db.Errorf(db.ECONFLICT, "a paid order cannot be cancelled")
	default:
		return nil, db.ErrExpired
	}
}

// expireScript expires an unpaid order whose deadline has passed: the unit
// goes back to stock and the user's limit mark is cleared. Anything else is
// left alone, so it may run any number of times (ExpireDue runs it in batches).
//
// KEYS: scriptKeys
// ARGV: 1 sequence, 2 now ms
// Returns "word:remaining:slot:version:record" where word is ok | paid | closed
// (already expired, cancelled or failed) | not_due, or not_found.
var expireScript = redis.NewScript(goodsLua + `
local rec, f = order(ARGV[1])
if not rec then return 'not_found' end
if f[5] == 'paid' then return answer('paid', rec) end
if f[5] ~= 'unpaid' then return answer('closed', rec) end
if tonumber(ARGV[2]) < tonumber(f[7]) then return answer('not_due', rec) end
return answer('ok', close(f, 'expired', ARGV[2], true))
`)

// ErrNotDue is returned when an order's expiry runs before its deadline.
var ErrNotDue = &db.Error{Code: db.ECONFLICT, Message: "the order is not due to expire yet"}

// ExpireOrder expires the order if it is still unpaid at its deadline; an
// order paid, closed or unknown is left alone (nil), one not yet due is ErrNotDue.
func (s *Service) ExpireOrder(ctx context.Context, orderID int64) error {
	return s.expireOrder(ctx, orderID, s.Now())
}

func (s *Service) expireOrder(ctx context.Context, orderID int64, now time.Time) error {
	_, code, err := s.runOrderScript(ctx, 0, orderID, expireScript, now)
	if db.ErrorCode(err) == db.ENOTFOUND {
		return nil
	} else if err != nil {
		return err
	}
	if code == "not_due" {
		return ErrNotDue
	}
	return nil
}

// voidScript ends an order the durable unit guard refused: its unit was
// sold to an earlier order already (Redis had been restored from an old
// snapshot), so it fails and the unit is not returned to stock; the user's
// limit mark is cleared. An unpaid order fails as sold_twice; a paid one as
// refund_due, leaving the paid count and the revenue. ARGV 3–5 name the
// refused order, so an order that took its sequence since is left alone.
//
// KEYS: scriptKeys
// ARGV: 1 sequence, 2 now ms, 3 user ID, 4 unit, 5 created ms
// Returns "word:remaining:slot:version:record" where word is ok (it failed) | closed
// (it had ended already) | other (another order holds the sequence), or not_found.
var voidScript = redis.NewScript(goodsLua + `
local rec, f = order(ARGV[1])
if not rec then return 'not_found' end
if f[2] ~= ARGV[3] or f[3] ~= ARGV[4] or f[6] ~= ARGV[5] then return answer('other', rec) end
if f[5] == 'unpaid' then
	f[10] = 'sold_twice'
	return answer('ok', close(f, 'failed', ARGV[2], false))
end
if f[5] ~= 'paid' then return answer('closed', rec) end
f[10] = 'refund_due'
if redis.call('HINCRBY', K_HELD, f[2], -1) <= 0 then redis.call('HDEL', K_HELD, f[2]) end
redis.call('HINCRBY', K_COUNTS, 'paid', -1)
redis.call('HINCRBY', K_COUNTS, 'failed', 1)
redis.call('HINCRBY', K_COUNTS, 'revenue', -tonumber(f[4]))
redis.call('HINCRBY', K_COUNTS, 'discount', -(tonumber(f[11]) or 0))
return answer('ok', save(f, 'failed', ARGV[2]))
`)

// keyedOrderScripts are the order scripts that honour an Idempotency-Key, each with its keyed variant.
var keyedOrderScripts = map[*redis.Script]struct {
	script *redis.Script
	op     string
}{payScript: {payScriptKeyed, "pay"}, cancelScript: {cancelScriptKeyed, "cancel"}, refundScript: {refundScriptKeyed, "refund"}}

// runOrderScript runs one of the order scripts for orderID (owned by userID
// unless it is 0) and pushes the change live. A "not_found" from Redis looks
// in the store, for orders of goods no longer active. extra are the
// script's arguments after the common ones.
func (s *Service) runOrderScript(ctx context.Context, userID, orderID int64, script *redis.Script, now time.Time, extra ...any) (*model.Order, string, error) {
	goodsID, seq, ok := SplitOrderID(orderID)
	if !ok {
		return nil, "", db.Errorf(db.ENOTFOUND, "order %d not found", orderID)
	}
	args := []any{seq, userID, now.UnixMilli()}
	if userID == 0 {
		args = []any{seq, now.UnixMilli()}
	}
	args = append(args, extra...)
	b, err := s.orderBucket(ctx, goodsID, seq)
	if err != nil {
		return nil, "", err
	}
	keys := scriptKeys(b)
	if k, ok := keyedOrderScripts[script]; ok {
		if req, keyed := db.KeyedRequestID(ctx, k.op, userID); keyed {
			script, keys = k.script, scriptKeys(b, memoKey(b, req+":"+strconv.FormatInt(seq, 10)))
			args = append(args, db.IdempotencyTTL.Milliseconds())
		}
	}
	res, err := s.Eval(ctx, script, keys, args...).Text()
	if err != nil {
		return nil, "", fmt.Errorf("order %d: %w", orderID, err)
	}
	return s.orderAnswer(ctx, userID, orderID, b, res)
}

// orderAnswer reads an order script's reply about orderID (of userID, 0 for
// any) run in bucket b and pushes a change live. A "not_found" from Redis
// looks in the store, for orders of goods no longer active.
func (s *Service) orderAnswer(ctx context.Context, userID, orderID int64, b bucket, res string) (*model.Order, string, error) {
	a, err := parseAnswer(b.goods, res)
	if err != nil {
		return nil, "", err
	}
	if a.code == "not_found" {
		return s.settledOrder(ctx, userID, orderID)
	}
	o, err := parseOrderRecord(b.goods, a.rec)
	if err != nil {
		return nil, "", err
	}
	if a.code == "ok" || a.code == "lapsed" {
		s.pushStock(b, a.slot, a.remaining, a.version)
		s.pushOrder(o)
	}
	return o, a.code, nil
}

// orderBucket is the bucket holding the goods' order of sequence seq.
func (s *Service) orderBucket(ctx context.Context, goodsID, seq int64) (bucket, error) {
	k, err := s.shardsOne(ctx, goodsID, true)
	if err != nil {
		return bucket{}, err
	}
	return bucketOfSeq(goodsID, seq, k), nil
}

// settledOrder answers an order script for an order Redis no longer holds
// (its goods finished): the store has its final status.
func (s *Service) settledOrder(ctx context.Context, userID, orderID int64) (*model.Order, string, error) {
	o, err := s.sqlOrder(ctx, userID, orderID)
	if db.ErrorCode(err) == db.ENOTFOUND {
		return nil, "not_found", err
	} else if err != nil {
		return nil, "", err
	}
	if o.Status == model.OrderUnpaid {
		// Redis lost it and the goods is not loaded again yet: nothing may change until it is.
		return nil, "", db.Errorf(db.ECONFLICT, "order %d is being restored; try again shortly", orderID)
	}
	return o, o.Status, nil // paid, expired, cancelled or failed: final
}

// OrderOf returns any user's order, from Redis while its goods is active,
// else from the store: for the checkout's sweep and the payment gateway.
func (s *Service) OrderOf(ctx context.Context, orderID int64) (*model.Order, error) {
	goodsID, seq, ok := SplitOrderID(orderID)
	if !ok {
		return nil, db.Errorf(db.ENOTFOUND, "order %d not found", orderID)
	}
	b, err := s.orderBucket(ctx, goodsID, seq)
	if err != nil {
		return nil, err
	}
	rec, err := s.Redis.HGet(ctx, ordersKey(b), strconv.FormatInt(seq, 10)).Result()
	switch {
	case err == nil:
		return parseOrderRecord(goodsID, rec)
	case errors.Is(err, redis.Nil):
		return s.sqlOrder(ctx, 0, orderID)
	default:
		return nil, fmt.Errorf("order %d: %w", orderID, err)
	}
}

// Order returns one of the user's orders; other users' orders are not found.
func (s *Service) Order(ctx context.Context, userID, orderID int64) (*model.Order, error) {
	o, err := s.OrderOf(ctx, orderID)
	if db.ErrorCode(err) == db.ENOTFOUND || (err == nil && o.UserID != userID) {
		return nil, db.Errorf(db.ENOTFOUND, "order %d not found", orderID)
	}
	return o, err
}

// orderTableColumns are the columns orders and order_conflicts share, for
// reading both as one.
const orderTableColumns = `id, goods_id, user_id, unit, amount_cents, status, created_ms, expires_ms, updated_ms, version, failure,
	discount_cents, paid_cents, user_coupon_id, paid_at_ms, refunded_ms`

const orderColumns = `o.id, o.goods_id, o.user_id, o.unit, o.amount_cents, o.status, o.created_ms, o.expires_ms, o.updated_ms, o.version, o.failure,
	o.discount_cents, o.paid_cents, o.user_coupon_id, o.paid_at_ms, o.refunded_ms, COALESCE(g.title, '')`

func scanOrder(row interface{ Scan(...any) error }) (*model.Order, error) {
	var o model.Order
	var created, expires, updated, paidCents, paidAt, refundedAt int64
	if err := row.Scan(&o.ID, &o.GoodsID, &o.UserID, &o.Unit, &o.AmountCents, &o.Status, &created, &expires, &updated, &o.Version,
		&o.Failure, &o.DiscountCents, &paidCents, &o.UserCouponID, &paidAt, &refundedAt, &o.GoodsTitle); err != nil {
		return nil, err
	}
	o.CreatedAt, o.ExpiresAt, o.UpdatedAt = msTime(created), msTime(expires), msTime(updated)
	fillPaid(&o, paidAt, refundedAt)
	return &o, nil
}

// sqlOrder returns the order the store holds under id, from orders or else from
// the refused orders (a failed duplicate lives there); userID, unless 0,
// must own it.
func (s *Service) sqlOrder(ctx context.Context, userID, id int64) (*model.Order, error) {
	for _, table := range []string{"orders", "order_conflicts"} {
		o, err := scanOrder(s.SQL.R.QueryRowContext(ctx, `SELECT `+orderColumns+` FROM `+table+` o LEFT JOIN goods g ON g.id = o.goods_id
			WHERE o.id = ?1 AND (?2 = 0 OR o.user_id = ?2)`, id, userID))
		if !errors.Is(err, sql.ErrNoRows) {
			return o, err
		}
	}
	return nil, db.Errorf(db.ENOTFOUND, "order %d not found", id)
}

// MyOrders lists the user's orders, newest first: the store's durable record
// (refused orders too: a failed duplicate shows with its reason) overlaid
// with Redis's live state, so an order not flushed yet shows too.
func (s *Service) MyOrders(ctx context.Context, userID int64) ([]model.Order, error) {
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT `+orderColumns+` FROM (
			SELECT `+orderTableColumns+`, 0 AS refused FROM orders WHERE user_id = ?1
			UNION ALL SELECT `+orderTableColumns+`, 1 FROM order_conflicts WHERE user_id = ?1
		) o LEFT JOIN goods g ON g.id = o.goods_id ORDER BY o.id DESC, o.refused LIMIT 200`, userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byID := map[int64]*model.Order{}
	titles := map[int64]string{}
	for rows.Next() {
		o, err := scanOrder(rows)
		if err != nil {
			return nil, err
		}
		if _, ok := byID[o.ID]; !ok { // an ID two orders share (a restore): the one the store kept first
			byID[o.ID] = o
		}
		titles[o.GoodsID] = o.GoodsTitle
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	live, err := s.liveOrdersOf(ctx, userID)
	if err != nil {
		return nil, err
	}
	for _, o := range live {
		if old, ok := byID[o.ID]; ok {
			o.GoodsTitle = old.GoodsTitle
		} else if t, ok := titles[o.GoodsID]; ok {
			o.GoodsTitle = t
		} else if g, err := s.goodsRow(ctx, o.GoodsID); err == nil {
			o.GoodsTitle, titles[o.GoodsID] = g.Title, g.Title
		}
		byID[o.ID] = o
	}
	out := make([]model.Order, 0, len(byID))
	for _, o := range byID {
		out = append(out, *o)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ID > out[j].ID
	})
	return out, nil
}

// liveOrdersOf reads the user's orders on every active goods from Redis in two round trips.
func (s *Service) liveOrdersOf(ctx context.Context, userID int64) ([]*model.Order, error) {
	active, err := s.activeGoods(ctx)
	if err != nil || len(active) == 0 {
		return nil, err
	}
	shards, err := s.shardsOf(ctx, true, active...)
	if err != nil {
		return nil, err
	}
	// All of a user's orders of a goods are in the user's home bucket.
	home := make([]bucket, len(active))
	for i, g := range active {
		home[i] = bucket{goods: g, n: homeBucket(userID, shards[g]), k: shards[g]}
	}
	uid := strconv.FormatInt(userID, 10)
	pipe := s.Redis.Pipeline()
	mine := make([]*redis.StringCmd, len(active))
	for i := range active {
		mine[i] = pipe.HGet(ctx, mineKey(home[i]), uid)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	pipe = s.Redis.Pipeline()
	type ref struct {
		goods int64
		cmd   *redis.SliceCmd
	}
	var refs []ref
	for i, g := range active {
		seqs := strings.Split(mine[i].Val(), ",")
		if mine[i].Val() == "" {
			continue
		}
		fields := make([]string, len(seqs))
		copy(fields, seqs)
		refs = append(refs, ref{g, pipe.HMGet(ctx, ordersKey(home[i]), fields...)})
	}
	if len(refs) == 0 {
		return nil, nil
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	var out []*model.Order
	for _, r := range refs {
		for _, v := range r.cmd.Val() {
			if rec, ok := v.(string); ok {
				if o, err := parseOrderRecord(r.goods, rec); err == nil && o.UserID == userID {
					out = append(out, o)
				}
			}
		}
	}
	return out, nil
}

// pushStock sends the goods' remaining stock to watchers of the goods and
// of its slot, given bucket b's remaining at version. With several buckets
// the event carries the sum over the buckets as this process last saw them
// (stockSums), at the newest version seen.
func (s *Service) pushStock(b bucket, slotID, remaining, version int64) {
	goodsID := b.goods
	if b.k > 1 {
		if remaining > 0 { // a unit came back (or is left): the bucket's neighbours may take it again
			s.dry.clear(b)
		}
		var ok bool
		if remaining, version, ok = s.stock.add(b, remaining, version, s.bucketRemaining); !ok {
			return
		}
	}
	ev := StockEvent{Type: "stock", GoodsID: goodsID, Remaining: remaining, Version: version}
	s.Events.PublishCoalescedVersion(live.TopicGoods(goodsID), live.TopicGoods(goodsID), version, ev)
	if slotID > 0 {
		// Keyed by slot and goods: coalesced apart from the goods topic and from the slot's other goods.
		s.Events.PublishCoalescedVersion(live.TopicSlot(slotID), live.TopicSlot(slotID)+"/"+live.TopicGoods(goodsID), version, ev)
	}
}

// pushOrder sends the order to its owner. It is coalesced per order so it
// leaves the request path at once and a later change always arrives last.
// The event is encoded here, as encoding/json would encode an OrderEvent,
// without reflection: every winning grab sends one.
func (s *Service) pushOrder(o *model.Order) {
	ev, err := o.MarshalJSON()
	if err != nil {
		s.Log.Warn("encode order event", "order", o.ID, "err", err)
		return
	}
	ev = append(append([]byte(`{"type":"order","order":`), ev...), '}')
	s.Events.PublishCoalescedKey(live.TopicUser(o.UserID), "order:"+strconv.FormatInt(o.ID, 10), json.RawMessage(ev))
}
