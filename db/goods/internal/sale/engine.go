package sale

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/groupcommit"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/rdb"
)

// The sale engine: every grab enters by Decide. A grab passes the stages
// the engine was built with, in their order (NewSale: the sale's pause,
// then the admission stages given, the fair sale's, then the refusal memo,
// here: what this process learnt of the goods' sale, which refusals.go
// keeps current), is routed to the user's home bucket (route, here, by the
// bucket count shards.go read) and is decided in Redis by one script,
// decideScript, batched with its bucket's other grabs of the moment
// (db/groupcommit). A stage with nothing to check of goods says so
// (Quiet), and the goods' grabs pass it by without running it: a
// first-come grab reads this file, the group commit and the backend's
// Eval; what the script's reply says is read in reply.go. The buckets'
// layout, steal, reshard and reserve are shards.go's.
// A raffle's winner is awarded by Award (doors.go), which passes no stage.

// Grab is one shopper's try for one unit of goods.
type Grab struct {
	User, Goods int64
	// Pass is what the shopper brings besides the account (the stages read it).
	Pass Pass
	// Request is the request's Idempotency-Key as db.KeyedRequestID names
	// it ("": Decide reads it from the context): its answer is kept in
	// Redis for the key's retries.
	Request string
}

// Outcome is a grab's answer: the order won and its JSON (as its
// MarshalJSON gives it, the win's live event's encoding), or the refusal.
type Outcome struct {
	Order *model.Order
	JSON  []byte
	Err   error
}

// Pass is what a shopper brings to a grab besides the account: a proof of
// work (the X-Pow header) and a waiting room's admission (X-Admission).
type Pass struct{ Pow, Admission string }

// Stage is one check a grab passes before Redis decides it. Check refuses
// the grab (err) or lets it on; done, when not nil, is told the outcome.
// A stage may also be Quieting.
type Stage interface {
	Check(ctx context.Context, g Grab) (done func(Outcome), err error)
}

// Quieting is a stage that names the goods it has nothing to check of
// (their settings ask nothing of a grab): the engine asks for its Quiet
// once, at construction, and passes the stage by for grabs of goods marked
// there.
type Quieting interface {
	Stage
	Quiet() *Quiet
}

// Quiet is the goods a stage has nothing to check of for now, each until a
// time on the sale's clock: the stage marks goods from its settings (Mark,
// with the generation it read before them) and tells every change of its
// settings (Changed), which unmarks them all; the engine passes the stage
// by for a grab of goods marked. A mark made from settings read before a
// change is never taken, so a change holds from the stage's next grab on;
// a mark lasts as long as the stage trusts the settings it read.
type Quiet struct {
	gen atomic.Int64
	m   sync.Map // goods ID → quietMark
}

type quietMark struct{ gen, from, until int64 } // from, until: unix ns

// Gen is the generation of the stage's settings: read it before them, and
// hand it to Mark.
func (q *Quiet) Gen() int64 { return q.gen.Load() }

// Mark lets grabs of the goods pass the stage unchecked from from (the
// settings' read) until until, while the stage's settings have not changed
// since gen.
func (q *Quiet) Mark(goodsID, gen int64, from, until time.Time) {
	q.m.Store(goodsID, quietMark{gen: gen, from: from.UnixNano(), until: until.UnixNano()})
}

// Changed unmarks every goods: the stage's settings changed.
func (q *Quiet) Changed() { q.gen.Add(1) }

// quiet reports whether the stage has nothing to check of the goods at now.
func (q *Quiet) quiet(goodsID int64, now time.Time) bool {
	v, ok := q.m.Load(goodsID)
	if !ok {
		return false
	}
	m, t := v.(quietMark), now.UnixNano()
	return m.gen == q.gen.Load() && m.from <= t && t < m.until
}

// grabMemoTTL is how long a grab's answer is remembered for retries of the same request.
const grabMemoTTL = 5 * time.Minute

// Decide decides grabs; one grab is a batch of one. Each passes the stages
// in order, then Redis decides it: concurrent grabs of a bucket share one
// call (group commit), a keyed grab goes alone, its answer kept under its
// key. A win's live event is sent and it is journaled (journal.go) before
// Decide returns.
func (s *Sale) Decide(ctx context.Context, grabs []Grab) []Outcome {
	out := make([]Outcome, len(grabs))
	if len(grabs) == 1 {
		out[0] = s.decide(ctx, grabs[0])
		return out
	}
	var wg sync.WaitGroup
	for i := range grabs {
		wg.Add(1)
		go func() { defer wg.Done(); out[i] = s.decide(ctx, grabs[i]) }()
	}
	wg.Wait()
	return out
}

// Grab is Decide for one grab with no pass.
func (s *Sale) Grab(ctx context.Context, userID, goodsID int64) (*model.Order, error) {
	o := s.Decide(ctx, []Grab{{User: userID, Goods: goodsID}})[0]
	return o.Order, o.Err
}

// decide is one grab: the stages, then Redis.
func (s *Sale) decide(ctx context.Context, g Grab) Outcome {
	if g.Goods <= 0 || g.Goods > MaxID {
		if held := db.HeldRefusal(ctx); held != nil {
			return Outcome{Err: held}
		}
		return Outcome{Err: db.Errorf(db.ENOTFOUND, "goods %d not found", g.Goods)}
	}
	if g.Request == "" {
		g.Request, _ = db.KeyedRequestID(ctx, "goods", g.User)
	}
	var held [4]func(Outcome) // the stages' dones, on the stack for the few stages there are
	dones := held[:0]
	refuse := func(err error) Outcome {
		for _, d := range dones {
			d(Outcome{Err: err})
		}
		return Outcome{Err: err}
	}
	now := s.Now()
	for i, st := range s.stages {
		if q := s.quiet[i]; q != nil && q.quiet(g.Goods, now) {
			continue
		}
		done, err := st.Check(ctx, g)
		if err != nil {
			if s.remembered(ctx, g) {
				// A keyed retry of a grab answered before: its proof is
				// spent, its admission may have lapsed, the sale may be
				// paused, but the answer is the first one.
				return s.decided(ctx, g, now, dones)
			}
			return refuse(err)
		}
		if done != nil {
			dones = append(dones, done)
		}
	}
	s.admitted.Add(1)
	done, err := s.memoCheck(ctx, g, now) // the last stage
	if err != nil {
		return refuse(err)
	}
	if done != nil {
		dones = append(dones, done)
	}
	return s.decided(ctx, g, now, dones)
}

// decided is the grab decided in Redis at now, its outcome told to the stages.
func (s *Sale) decided(ctx context.Context, g Grab, now time.Time, dones []func(Outcome)) Outcome {
	o := s.decideInRedis(ctx, g, now)
	for _, d := range dones {
		d(o)
	}
	return o
}

// Admitted is how many grabs passed the sale's pause and the admission
// stages in this process (the fair sale's capacity meter reads it).
func (s *Sale) Admitted() int64 { return s.admitted.Load() }

// paused is the first stage: a paused sale (db.WithHeldRefusal) refuses
// every grab.
type paused struct{}

func (paused) Check(ctx context.Context, _ Grab) (func(Outcome), error) {
	return nil, db.HeldRefusal(ctx)
}

// remembered reports whether the grab is a keyed retry of a grab answered
// before (its answer is kept under its key), so a retry a stage refuses is
// given the first answer instead.
func (s *Sale) remembered(ctx context.Context, g Grab) bool {
	if g.Request == "" {
		return false
	}
	k, _ := s.knownShards(g.Goods)
	home := Bucket{Goods: g.Goods, N: HomeBucket(g.User, k), K: k}
	n, err := s.Redis.Exists(ctx, MemoKey(home, g.Request)).Result()
	return err == nil && n == 1
}

// memoCheck is the engine's last stage, the refusal memo: a grab this
// process knows the script would refuse is refused here, and every answer
// Redis gives is learnt (done: refusals.go, which keeps what is learnt
// current). A keyed grab's answer is kept in Redis for its retries: it
// asks there, and what it is told (perhaps its first answer again) is not
// learnt.
func (s *Sale) memoCheck(ctx context.Context, g Grab, now time.Time) (done func(Outcome), err error) {
	if !s.memos.following.Load() {
		return nil, nil
	}
	var memo *saleMemo
	var epoch int64
	if v, ok := s.memos.m.Load(g.Goods); ok {
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
		if g.Request == "" {
			if err := memo.refusal(g.User, now); err != nil {
				return nil, err
			}
		} else {
			// A keyed grab may be told its first answer again, kept in
			// Redis: a limit_reached from before a cancel, a sold out from
			// before a unit came back. It says nothing of now: learnt
			// under no epoch, it is never used.
			epoch = -1
		}
	}
	return func(o Outcome) { s.learnOutcome(ctx, memo, epoch, g, o) }, nil
}

// refusal is the answer the grab script would give the user now, as far as
// this process knows, or nil when it must ask. Its order is the script's:
// not started, ended, the user's limit, then the stock.
func (m *saleMemo) refusal(userID int64, now time.Time) error {
	e := m.epoch.Load() + 1
	if t := time.Now().UnixNano(); t-m.used.Load() > int64(100*time.Millisecond) {
		m.used.Store(t)
	}
	if ns := m.notStarted.Load(); ns != nil && ns.mark == e && now.UnixMilli() < ns.startMS {
		return db.ErrNotStarted
	}
	if m.ended.Load() == e {
		return db.ErrEnded
	}
	if v, ok := m.limit.Load(userID); ok && v.(int64) == e {
		return db.ErrLimitReached
	}
	if m.soldOut.Load() == e {
		m.won.mu.RLock()
		_, won := m.won.m[userID] // a winner: Redis tells limit_reached from sold_out
		m.won.mu.RUnlock()
		if won {
			return nil
		}
		return db.ErrSoldOut
	}
	return nil
}

// knownShards is the goods' bucket count as this process last read it, at
// any age (1 and false: not read yet).
func (s *Sale) knownShards(goodsID int64) (int, bool) {
	if v, ok := s.shards.m.Load(goodsID); ok {
		return v.(shardsEntry).k, true
	}
	return 1, false
}

// route is the bucket count a grab of the goods is routed by: as this
// process last read it, at any age (decideScript refuses a stale count:
// reshard), else read from Redis (shards.go).
func (s *Sale) route(ctx context.Context, goodsID int64) (int, error) {
	if k, ok := s.knownShards(goodsID); ok {
		return k, nil
	}
	return s.ShardsOne(ctx, goodsID, true)
}

// HomeBucket is the bucket of k holding the user's orders and limit mark:
// the bucket that decides the user's grabs (shards.go: the buckets).
func HomeBucket(userID int64, k int) int {
	if k <= 1 {
		return 0
	}
	// A multiplicative hash, so consecutive user IDs spread over the buckets.
	h := uint64(userID) * 0x9E3779B97F4A7C15
	return int((h >> 32) % uint64(k))
}

// decideInRedis decides the grab at now in its home bucket: batched with the
// grabs of the bucket at the same moment, or alone when keyed. A home
// bucket without stock sends it on to the others (shards.go: elsewhere);
// a changed bucket count, an exhausted block of order sequences and goods
// missing from Redis are mended and the grab tried again.
func (s *Sale) decideInRedis(ctx context.Context, g Grab, now time.Time) Outcome {
	k, err := s.route(ctx, g.Goods)
	if err != nil {
		return Outcome{Err: err}
	}
	for attempt := 0; ; attempt++ {
		home := Bucket{Goods: g.Goods, N: HomeBucket(g.User, k), K: k}
		var d decided
		if g.Request == "" && s.batches != nil {
			// A grab waits for its batch even when its caller leaves: once
			// queued it may be sold, and the caller that runs a batch answers the others.
			d, err = s.batches.group.Do(context.WithoutCancel(ctx), home, batchedGrab{user: g.User, now: now})
			if err == nil {
				err = d.err
			}
		} else {
			d, err = s.decideAlone(ctx, home, g, now, "")
		}
		if err == nil && d.Code == "dry" {
			d, err = s.elsewhere(ctx, home, g, now)
		}
		if err != nil {
			return Outcome{Err: fmt.Errorf("grab goods %d: %w", g.Goods, err)}
		}
		switch d.Code {
		case "ok":
			return Outcome{Order: d.order, JSON: d.json}
		case "hidden": // its merchant hid it: not there for shoppers
			return Outcome{Err: db.Errorf(db.ENOTFOUND, "goods %d not found", g.Goods)}
		case "not_started":
			return Outcome{Err: db.ErrNotStarted}
		case "ended":
			return Outcome{Err: db.ErrEnded}
		case "limit_reached":
			return Outcome{Err: db.ErrLimitReached}
		case "sold_out":
			return Outcome{Err: db.ErrSoldOut}
		case "reshard", "reserve", "moved", "not_loaded":
			if k, err = s.mend(ctx, home, d.Code, attempt); err != nil {
				return Outcome{Err: err}
			}
		default:
			return Outcome{Err: fmt.Errorf("grab goods %d: unexpected answer %q", g.Goods, d.Code)}
		}
	}
}

// decideAlone runs decideScript for one grab under its own request (a
// fresh one when it has none), bringing unit ("": none) taken from another
// bucket.
func (s *Sale) decideAlone(ctx context.Context, home Bucket, g Grab, now time.Time, unit string) (decided, error) {
	req, keep := g.Request, g.Request != ""
	if req == "" {
		req = rdb.NewRequestID()
	}
	out := make([]decided, 1)
	err := s.runDecision(ctx, home, req, keep, unit, []batchedGrab{{user: g.User, now: now}}, out)
	return out[0], err
}

// decideScript decides grabs of one bucket, grab by grab in arrival
// order, each with its own user, time and expiry: the sale's window, the
// user's limit, the stock (a unit given back first, else a fresh one;
// none: sold_out, or dry with several buckets, others may have some);
// then it records each win's order, the user's limit mark and list, the
// expiry deadline and the flush record. Reads the grabs share happen once,
// and the wins' writes go out together at the end.
//
// The reply is remembered under KEYS[11] (the call's memo key, under the
// bucket's hash tag) once anything was sold, and, for a keyed grab (ARGV[5]
// '1'), once every answer is final: when go-redis runs the command again
// after a lost reply, or the key's owner retries, the same answers come
// back (with the stock as it is now) and no unit is taken twice.
//
// KEYS: ScriptKeys (of the bucket), then 11 the call's memo key
// ARGV: 1 the goods' bucket count as the caller knows it, 2 '1' on a Redis
// Cluster (the bucket's node is checked: seq_blocks.go), 3 memo TTL ms, 4 a
// unit brought from another bucket ("": none; put in the free list first,
// so it stays on sale whatever the answer), 5 '1': keep final refusals
// too, 6 the number of grabs n, then per grab i (from 0) at 7+3i: user ID,
// now ms, expiry ms.
// Returns a word the whole call gets (not_loaded | moved | reshard |
// hidden: saleInfo), or "remaining:slot:version" and then one line per
// grab, joined by "\n": a word (not_started | ended | limit_reached |
// reserve | sold_out | dry) or "ok:record". The remaining stock is the
// bucket's after the call.
var decideScript = redis.NewScript(GoodsLua + `
if ARGV[4] ~= '' then redis.call('RPUSH', K_FREE, ARGV[4]); redis.call('HINCRBY', K_INFO, 'back', 1) end
local function head() return remaining() .. ':' .. (redis.call('HGET', K_INFO, 'slot') or '0') .. ':' .. version() end
local memo = redis.call('GET', KEYS[11])
if memo then
	local lines = string.match(memo, '^[^\n]*\n(.*)$')
	if not lines then
		-- a word, or an answer the release before kept: a bare record, or a keyed answer in JSON
		if string.sub(memo, 1, 1) == '"' then memo = cjson.decode(memo) end
		if not string.find(memo, '|', 1, true) then return memo end
		lines = 'ok:' .. string.match(memo, '([^:]*)$')
	end
	return head() .. '\n' .. lines
end
local info, word = saleInfo(ARGV[2], ARGV[1])
if not info then
	if word == 'hidden' and ARGV[5] == '1' then redis.call('SET', KEYS[11], word, 'PX', ARGV[3]) end
	return word
end
local shards = tonumber(info[6]) or 1
local start, stop, limit = tonumber(info[1]), tonumber(info[2]), tonumber(info[4])
local ceil, base = tonumber(info[9]), tonumber(info[7])
local seq = tonumber(redis.call('GET', K_SEQ)) or 0
local fresh = tonumber(redis.call('GET', K_FRESH)) or 0
local fresh0, nfree = fresh, redis.call('LLEN', K_FREE)
local n = tonumber(ARGV[6])
-- the limit marks of the grabs' users, read at once
local held, users = {}, {}
for i = 0, n - 1 do
	local uid = ARGV[7 + 3 * i]
	if not held[uid] then held[uid] = true; users[#users + 1] = uid end
end
local marks = redis.call('HMGET', K_HELD, unpack(users))
for j, uid in ipairs(users) do held[uid] = tonumber(marks[j]) or 0 end
local orders, deadlines, pending = {}, {}, {}
local seqs, winners = {}, {} -- per user the sequences the call gave them
local out, wins, final = {}, 0, true
for i = 0, n - 1 do
	local uid, now, exp = ARGV[7 + 3 * i], tonumber(ARGV[8 + 3 * i]), ARGV[9 + 3 * i]
	local res
	if now < start then res = 'not_started'
	elseif now >= stop then res = 'ended'
	else
		local h = held[uid]
		if h >= limit then res = 'limit_reached'
		elseif ceil and seq >= ceil then res = 'reserve'; final = false
		else
			local unit = false
			if nfree > 0 then unit = redis.call('RPOP', K_FREE); nfree = nfree - 1 end
			if not unit then
				if fresh <= 0 then
					nfree = 0
					if shards > 1 then res = 'dry'; final = false else res = 'sold_out' end
				else
					unit = tostring(fresh + (base or 0)) -- the bucket's units start after base
					fresh = fresh - 1
				end
			end
			if unit then
				seq = seq + 1
				local rec = orderRecord({[F_SEQ] = seq, [F_USER] = uid, [F_UNIT] = unit, [F_AMOUNT] = info[3], [F_STATUS] = 'unpaid',
					[F_CREATED] = ARGV[8 + 3 * i], [F_EXPIRES] = exp, [F_VERSION] = 1, [F_UPDATED] = ARGV[8 + 3 * i]})
				orders[#orders + 1] = seq; orders[#orders + 1] = rec
				deadlines[#deadlines + 1] = exp; deadlines[#deadlines + 1] = seq
				pending[#pending + 1] = rec
				held[uid] = h + 1
				if seqs[uid] then seqs[uid] = seqs[uid] .. ',' .. seq
				else seqs[uid] = tostring(seq); winners[#winners + 1] = uid end
				wins = wins + 1
				res = 'ok:' .. rec
			end
		end
	end
	out[#out + 1] = res
end
if wins > 0 then
	redis.call('SET', K_SEQ, seq)
	if fresh ~= fresh0 then redis.call('SET', K_FRESH, fresh) end
	redis.call('HSET', K_ORDERS, unpack(orders))
	local lists = redis.call('HMGET', K_MINE, unpack(winners))
	local hm, mm = {}, {}
	for j, uid in ipairs(winners) do
		hm[#hm + 1] = uid; hm[#hm + 1] = held[uid]
		mm[#mm + 1] = uid; mm[#mm + 1] = lists[j] and (lists[j] .. ',' .. seqs[uid]) or seqs[uid]
	end
	redis.call('HSET', K_HELD, unpack(hm))
	redis.call('HSET', K_MINE, unpack(mm))
	redis.call('ZADD', K_DEADLINES, unpack(deadlines))
	redis.call('RPUSH', K_PENDING, unpack(pending))
	redis.call('HINCRBY', K_COUNTS, 'unpaid', wins)
end
local reply = (fresh + nfree) .. ':' .. info[5] .. ':' .. version() .. '\n' .. table.concat(out, '\n')
if wins > 0 or (final and ARGV[5] == '1') then redis.call('SET', KEYS[11], reply, 'PX', ARGV[3]) end
return reply
`)

// decideKeys are decideScript's keys for bucket b under request req: the
// bucket's ScriptKeys, made once when its count was read (shards.go), and
// the call's memo key.
func (s *Sale) decideKeys(b Bucket, req string) []string {
	if v, ok := s.shards.m.Load(b.Goods); ok {
		if e := v.(shardsEntry); e.k == b.K && b.N < len(e.keys) {
			bk := e.keys[b.N]
			keys := make([]string, len(bk.script)+1)
			copy(keys, bk.script)
			keys[len(bk.script)] = bk.memo + req
			return keys
		}
	}
	return ScriptKeys(b, MemoKey(b, req))
}

// decideArgs is decideScript's ARGV for grabs of bucket b.
func (s *Sale) decideArgs(b Bucket, keep bool, unit string, grabs []batchedGrab) []any {
	keepFlag := ""
	if keep {
		keepFlag = "1"
	}
	args := make([]any, 0, 6+3*len(grabs))
	args = append(args, b.K, s.ClusterFlag(), grabMemoTTL.Milliseconds(), unit, keepFlag, len(grabs))
	for _, g := range grabs {
		args = append(args, g.user, g.now.UnixMilli(), g.now.Add(s.OrderTTL).UnixMilli())
	}
	return args
}

// runDecision runs decideScript for grabs of bucket b under request req
// (keep: a keyed grab's, whose final refusals are kept too), bringing unit,
// and reads each grab's answer into out (readDecision, reply.go).
func (s *Sale) runDecision(ctx context.Context, b Bucket, req string, keep bool, unit string, grabs []batchedGrab, out []decided) error {
	res, err := s.Eval(ctx, decideScript, s.decideKeys(b, req), s.decideArgs(b, keep, unit, grabs)...).Text()
	if b.K > 1 {
		s.countTrip(b.Goods, unit == "", len(grabs))
	}
	if err != nil {
		return err
	}
	return s.readDecision(b, res, out)
}

// MaxGrabBatch is the most grabs one call of decideScript decides.
const MaxGrabBatch = 32

// grabBatchesInFlight is how many calls of one Bucket may be in flight at
// once: with one, a spike's grabs of a goods would go at most MaxGrabBatch
// a round trip; the pipeliner sends the calls of a moment in one write.
const grabBatchesInFlight = 2

// grabBatcher groups the concurrent grabs of each Bucket into batches
// (group commit): a grab that finds fewer than grabBatchesInFlight calls
// of its Bucket in flight runs at once, alone; grabs that arrive while they
// are in flight wait for one to end and go together in the next call, up
// to MaxGrabBatch. Nothing waits on a timer: the window is the call in flight.
type grabBatcher struct {
	group *groupcommit.Group[Bucket, batchedGrab, decided]

	calls, grabs atomic.Int64 // batches run and the grabs in them
}

func newGrabBatcher(s *Sale) *grabBatcher {
	return &grabBatcher{group: groupcommit.New(s.runGrabBatch,
		groupcommit.Options{MaxBatch: MaxGrabBatch, InFlight: grabBatchesInFlight})}
}

// batchedGrab is one grab in a batch.
type batchedGrab struct {
	user int64
	now  time.Time
}

// runGrabBatch decides a batch of grabs of bucket b under a request of its own.
func (s *Sale) runGrabBatch(ctx context.Context, b Bucket, grabs []batchedGrab) ([]decided, error) {
	s.batches.calls.Add(1)
	s.batches.grabs.Add(int64(len(grabs)))
	out := make([]decided, len(grabs))
	if err := s.runDecision(ctx, b, rdb.NewRequestID(), false, "", grabs, out); err != nil {
		return nil, err
	}
	return out, nil
}
