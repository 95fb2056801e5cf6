package sale

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/rdb"
)

// grabMemoTTL is how long a grab's answer is remembered for retries of the same request.
const grabMemoTTL = 5 * time.Minute

// grabScript decides a grab: the slot window, the per-user limit, the stock
// (a unit given back first, else a fresh one; refused at 0), then records the
// order, the user's limit mark and list, the expiry deadline and the flush
// record. The answer is remembered under the request ID, so when go-redis
// retries a command whose reply was lost the same order comes back.
//
// With several buckets it runs in the user's home bucket (see shards.go):
// its stock is the bucket's, and ARGV[5], when not empty, is a unit taken
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
var grabScript = redis.NewScript(GoodsLua + grabLua)

const grabLua = `
if ARGV[5] ~= '' then redis.call('RPUSH', K_FREE, ARGV[5]); redis.call('HINCRBY', K_INFO, 'back', 1) end
local memo = redis.call('GET', KEYS[11])
if memo then return answer('ok', memo) end
local info, word = saleInfo(ARGV[6], ARGV[4])
if not info then return word end
local shards = tonumber(info[6]) or 1
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
local rec = orderRecord({[F_SEQ] = seq, [F_USER] = uid, [F_UNIT] = unit, [F_AMOUNT] = info[3], [F_STATUS] = 'unpaid',
	[F_CREATED] = ARGV[2], [F_EXPIRES] = ARGV[3], [F_VERSION] = 1, [F_UPDATED] = ARGV[2]})
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
var grabScriptKeyed = KeyedGoodsScript(grabLua, "res ~= 'not_loaded' and res ~= 'reshard' and res ~= 'dry' and res ~= 'reserve' and res ~= 'moved'")

// stealScript takes one unit from a bucket for a grab whose home bucket has
// none: a unit given back first, else a fresh one. Outside the sale's
// window (the merchant ended it, bucket by bucket) it takes none.
//
// KEYS: scriptKeys (of the bucket)
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

// Pass is what a shopper brings to a grab besides the account: a proof of
// work (the X-Pow header) and a waiting room's admission (X-Admission).
type Pass struct{ Pow, Admission string }

// Gate is asked before a grab reaches Redis: fair sales refuse a grab that
// lacks what its goods ask for. done, when not nil, is told how the grab ended.
type Gate interface {
	Pass(ctx context.Context, userID, goodsID int64, p Pass) (done func(error), err error)
}

// GrabWith is a grab that passes the Gate first: what POST
// /api/goods/{id}/grab does.
func (s *Sale) GrabWith(ctx context.Context, userID, goodsID int64, p Pass) (*model.Order, error) {
	o, _, err := s.GrabJSON(ctx, userID, goodsID, p)
	return o, err
}

// GrabJSON is GrabWith with the order's JSON, as its MarshalJSON gives it:
// the win's live event was sent from the same encoding.
func (s *Sale) GrabJSON(ctx context.Context, userID, goodsID int64, p Pass) (*model.Order, []byte, error) {
	if held := db.HeldRefusal(ctx); held != nil { // the sale is paused: only a keyed retry of an answered grab is answered
		if goodsID > 0 && goodsID <= MaxID && s.remembered(ctx, userID, goodsID) {
			return s.grabAnswer(ctx, userID, goodsID)
		}
		return nil, nil, held
	}
	var done func(error)
	if s.Gate != nil && goodsID > 0 && goodsID <= MaxID { // another ID: the grab answers not found
		var err error
		if done, err = s.Gate.Pass(ctx, userID, goodsID, p); err != nil {
			if s.remembered(ctx, userID, goodsID) {
				// A keyed retry of a grab that won: its proof is spent and its
				// admission may have lapsed, but the answer is the first one.
				return s.grabAnswer(ctx, userID, goodsID)
			}
			return nil, nil, err
		}
	}
	o, enc, err := s.grabAnswer(ctx, userID, goodsID)
	if done != nil {
		done(err)
	}
	return o, enc, err
}

// remembered reports whether the request's Idempotency-Key names a grab
// answered before (its answer is kept under the key: grabScriptKeyed's
// memo), so a retry refused at the Gate or by a paused sale can be given
// the first answer instead.
func (s *Sale) remembered(ctx context.Context, userID, goodsID int64) bool {
	req, keyed := db.KeyedRequestID(ctx, "goods", userID)
	if !keyed {
		return false
	}
	_, keys, _ := s.GrabCall(userID, goodsID, req, s.Now())
	n, err := s.Redis.Exists(ctx, keys[len(keys)-1]).Result()
	return err == nil && n == 1
}

// Grab decides a grab in one Redis round trip with no SQL and nothing
// else in Redis: the order's deadline is in the goods' deadlines, where the
// periodic expiry (ExpireDue) finds it.
func (s *Sale) Grab(ctx context.Context, userID, goodsID int64) (*model.Order, error) {
	o, _, err := s.grabAnswer(ctx, userID, goodsID)
	return o, err
}

// grabAnswer is Grab, with the order's JSON (as its MarshalJSON gives
// it): a win's answer and its live event share one encoding.
func (s *Sale) grabAnswer(ctx context.Context, userID, goodsID int64) (*model.Order, []byte, error) {
	if goodsID <= 0 || goodsID > MaxID {
		return nil, nil, db.Errorf(db.ENOTFOUND, "goods %d not found", goodsID)
	}
	// A request ID is made only for a single call: a batch has its own.
	req, keyed := db.KeyedRequestID(ctx, "goods", userID)
	return s.GrabRequest(ctx, userID, goodsID, req, keyed, keyed)
}

// GrabCall is the grab script's call for one request at now: the script,
// its keys (of the user's home bucket, for the bucket count this process
// last read; 1 if none) and its arguments. Grab runs it through the
// pipeliner; the load bench runs it bare (one EVALSHA, no HTTP and no
// follow-up work) as the most a grab could do on the machine.
func (s *Sale) GrabCall(userID, goodsID int64, requestID string, now time.Time) (*redis.Script, []string, []any) {
	k := 1
	if v, ok := s.shards.m.Load(goodsID); ok {
		k = v.(shardsEntry).k
	}
	return s.grabCall(userID, goodsID, k, requestID, now)
}

func (s *Sale) grabCall(userID, goodsID int64, k int, requestID string, now time.Time) (*redis.Script, []string, []any) {
	home := Bucket{Goods: goodsID, N: HomeBucket(userID, k), K: k}
	return grabScript, ScriptKeys(home, MemoKey(home, requestID)),
		[]any{userID, now.UnixMilli(), now.Add(s.OrderTTL).UnixMilli(), k, "", s.ClusterFlag(), grabMemoTTL.Milliseconds()}
}

// grab runs the grab script under requestID in the user's home bucket
// (unless single, in a batch with the grabs of the bucket at the same
// moment: grab_batch.go; a keyed grab goes single, its answer kept under
// its own key);
// goods not in Redis are loaded when their sale is live (a preheat missed or
// Redis was emptied) and tried once more. A home bucket without stock sends
// the grab on to the others (grabElsewhere).
//
// A win's answer comes with the order's JSON; its live event is sent and it
// is journaled (journal.go; the ledger's phantoms.go reads it) before it returns.
func (s *Sale) GrabRequest(ctx context.Context, userID, goodsID int64, requestID string, keyed, single bool) (*model.Order, []byte, error) {
	now := s.Now()
	var memo *saleMemo
	var epoch int64
	if v, ok := s.memos.m.Load(goodsID); ok && s.memos.following.Load() {
		memo = v.(*saleMemo)
		if !memo.ready.Load() { // a new memo: wait the one read that lets it learn, rather than all ask Redis
			select {
			case <-memo.readyCh:
			case <-ctx.Done():
			}
		}
		epoch = memo.epoch.Load() // before the script: an answer made before a later change is stale on arrival
		if !memo.ready.Load() {
			epoch = -1 // asked before the memo's baseline: learnt under no epoch, so never used
		}
		if !keyed { // a keyed grab's answer is kept in Redis for its retries: it asks there
			if err := memo.refusal(userID, now); err != nil {
				return nil, nil, err
			}
		}
	}
	k, err := s.ShardsOne(ctx, goodsID, true)
	if err != nil {
		return nil, nil, err
	}
	for attempt := 0; ; attempt++ {
		var a answer
		stockOut := false
		if !single && s.batches != nil {
			// Grabs of one bucket at once share a call (grab_batch.go).
			if a, stockOut, err = s.grabBatched(ctx, Bucket{Goods: goodsID, N: HomeBucket(userID, k), K: k}, userID, now); err != nil {
				return nil, nil, fmt.Errorf("grab goods %d: %w", goodsID, err)
			}
			if a.Code == "dry" {
				if requestID == "" {
					requestID = rdb.NewRequestID()
				}
				script, keys, args := s.grabCall(userID, goodsID, k, requestID, now)
				res, err := s.grabElsewhere(ctx, userID, goodsID, k, script, keys, args)
				if err != nil {
					return nil, nil, err
				}
				if a, err = ParseAnswer(goodsID, res); err != nil {
					return nil, nil, err
				}
			}
		} else {
			if requestID == "" {
				requestID = rdb.NewRequestID()
			}
			script, keys, args := s.grabCall(userID, goodsID, k, requestID, now)
			if keyed {
				script = grabScriptKeyed
			}
			res, err := s.Eval(ctx, script, keys, args...).Text()
			if err != nil {
				return nil, nil, fmt.Errorf("grab goods %d: %w", goodsID, err)
			}
			if k > 1 {
				c := s.trips.count(goodsID)
				c.grabs.Add(1)
				c.trips.Add(1)
			}
			if res == "dry" {
				if res, err = s.grabElsewhere(ctx, userID, goodsID, k, script, keys, args); err != nil {
					return nil, nil, err
				}
			}
			if a, err = ParseAnswer(goodsID, res); err != nil {
				return nil, nil, err
			}
		}
		if memo == nil && (a.Code == "ok" || refusalCodes[a.Code]) && s.memos.following.Load() {
			// The goods' first win or refusal here: later refusals may come
			// from memory. This one was asked before the memo: no epoch.
			memo, epoch = s.saleMemo(goodsID), -1
		}
		if memo != nil {
			s.learnRefusal(ctx, memo, a.Code, userID, goodsID, epoch)
		}
		switch a.Code {
		case "ok":
			if a.win != nil { // decided in a batch, which sent its events and journaled it
				return a.win.order, a.win.json, nil
			}
			o, err := ParseOrderRecord(goodsID, a.Rec)
			if err != nil {
				return nil, nil, err
			}
			enc, err := o.MarshalJSON()
			if err != nil {
				return nil, nil, err
			}
			if !stockOut { // a batch sends its stock once
				s.PushStock(BucketOfSeq(goodsID, o.ID%OrderSeqSpan, k), a.Slot, a.Remaining, a.Version)
			}
			s.Events.SendAll([]live.Message{orderEvent(o, enc)}) // a new order: nothing to coalesce with
			s.Acks.add(Acked{at: time.Now(), GoodsID: goodsID, Rec: a.Rec})
			return o, enc, nil
		case "reshard": // the goods' bucket count changed (before its sale) since this process read it
			if attempt > 1 {
				return nil, nil, fmt.Errorf("grab goods %d: its bucket count keeps changing", goodsID)
			}
			s.shards.forget(goodsID)
			if k, err = s.ShardsOne(ctx, goodsID, false); err != nil {
				return nil, nil, err
			}
		case "reserve", "moved": // the bucket issued every sequence reserved, or another node did: reserve the next block
			if a.Code == "moved" {
				s.lost(ctx)
			}
			if attempt > 20 { // others took each block reserved since: only with tiny blocks
				return nil, nil, db.Errorf(db.EUNAVAILABLE, "goods %d: order numbers are being reserved; try again shortly", goodsID)
			}
			if err := s.extendSeqs(ctx, Bucket{Goods: goodsID, N: HomeBucket(userID, k), K: k}); err != nil {
				return nil, nil, err
			}
		case "hidden": // its merchant hid it: not there for shoppers
			return nil, nil, db.Errorf(db.ENOTFOUND, "goods %d not found", goodsID)
		case "not_started":
			return nil, nil, db.ErrNotStarted
		case "ended":
			return nil, nil, db.ErrEnded
		case "limit_reached":
			return nil, nil, db.ErrLimitReached
		case "sold_out":
			return nil, nil, db.ErrSoldOut
		case "not_loaded":
			if attempt > 0 {
				return nil, nil, fmt.Errorf("grab goods %d: still not loaded after loading", goodsID)
			}
			if err := s.loadLive(ctx, Bucket{Goods: goodsID, N: HomeBucket(userID, k), K: k}); err != nil {
				return nil, nil, err
			}
			s.shards.forget(goodsID)
			if k, err = s.ShardsOne(ctx, goodsID, false); err != nil {
				return nil, nil, err
			}
		default:
			return nil, nil, fmt.Errorf("grab goods %d: unexpected answer %q", goodsID, a.Code)
		}
	}
}

// grabElsewhere goes on with a grab whose home bucket (keys, args: the
// grab script's call there) had no stock: it takes a unit from the next
// bucket that has one (one round trip each; buckets found empty lately are
// tried last) and runs the grab script at home again with it. It answers
// as the grab script does; sold_out when no bucket had a unit. Sold out is
// never answered from the memo of empty buckets alone: a unit another grab
// brought to a bucket and could not use (its user's limit) is on sale there,
// even when this process marked the bucket empty a moment before, so every
// bucket is asked before sold_out, and home once more when any was empty.
// (Once sold out, refusals.go answers from memory without these trips.)
func (s *Sale) grabElsewhere(ctx context.Context, userID, goodsID int64, k int, script *redis.Script, keys []string, args []any) (string, error) {
	home := HomeBucket(userID, k)
	s.dry.mark(Bucket{Goods: goodsID, N: home, K: k})
	var others, later []Bucket
	for i := 1; i < k; i++ {
		b := Bucket{Goods: goodsID, N: (home + i) % k, K: k}
		if s.dry.dry(b) {
			later = append(later, b)
		} else {
			others = append(others, b)
		}
	}
	probed := false
	for _, b := range append(others, later...) {
		res, err := s.Eval(ctx, stealScript, ScriptKeys(b), args[1]).Text()
		s.trips.count(goodsID).trips.Add(1)
		if err != nil {
			return "", fmt.Errorf("grab goods %d: take a unit from bucket %d: %w", goodsID, b.N, err)
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
			return "", fmt.Errorf("grab goods %d: unreadable answer %q of bucket %d", goodsID, res, b.N)
		}
		remaining, _ := strconv.ParseInt(f[1], 10, 64)
		slot, _ := strconv.ParseInt(f[2], 10, 64)
		version, _ := strconv.ParseInt(f[3], 10, 64)
		s.PushStock(b, slot, remaining, version)
		with := append([]any(nil), args...)
		with[4] = f[0]
		res, err = s.Eval(ctx, script, keys, with...).Text()
		s.trips.count(goodsID).trips.Add(1)
		if err != nil {
			// The unit may be lost with the reply: stock short by one, never sold twice.
			return "", fmt.Errorf("grab goods %d with a unit of bucket %d: %w", goodsID, b.N, err)
		}
		if !strings.HasPrefix(res, "ok:") { // refused: the unit stays on sale in the home bucket
			s.dry.clear(Bucket{Goods: goodsID, N: home, K: k})
			s.SaleChanged(ctx, goodsID)
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
