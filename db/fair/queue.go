package fair

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/model"
)

// The waiting room of goods sold in mode queue. Its state is three keys
// under the goods' hash tag, shared by every web process:
//
//	q      hash: n (shoppers joined), F (how many joined before the start,
//	       set at the start), seed (the shuffle's, hex, set at the start),
//	       A (places admitted so far), r (the fraction of the next
//	       admission, in thousandths), t (when A was last advanced, unix
//	       ms), closed ("1" while the stock is gone or the sale over)
//	q:u    hash: user → the order they joined in, 0-based (j)
//	q:adv  zset: "A:t" scored A, one per advance of A: when each place was admitted
//
// A shopper's place is j for those who joined after the start and, for the
// F who joined before it, their shuffled place (queue_shuffle.go); the
// shopper is admitted once A > place. Nothing moves at the start and no
// ticker advances A: every script that reads the queue first adds what the
// time elapsed since t is worth at the rate (a fraction carried in r), so
// however many processes call it, and whenever, each millisecond of the
// sale is counted once, and never more than the queue holds (A ≤ n: an
// empty room does not store up admissions for a later crowd). A process
// that dies loses nothing; one that never calls leaves A to the others'
// calls. While closed, A stands still and time is not counted.
//
// A million waiting shoppers are a million fields of q:u (see docs/FAIR_SALES.md
// for the measured memory); a join is one script of a few hash commands.

func queueKey(goodsID int64) string      { return goods.HashTag(goodsID) + ":q" }
func queueUsersKey(goodsID int64) string { return goods.HashTag(goodsID) + ":q:u" }
func queueAdvKey(goodsID int64) string   { return goods.HashTag(goodsID) + ":q:adv" }

// queueJoinLogKey is the join log: "n:t" scored n, one per call that took
// n up (the inflow and the actual waits, queue_outflow.go).
func queueJoinLogKey(goodsID int64) string { return goods.HashTag(goodsID) + ":q:jn" }

// queueActiveKey is the set of goods with a waiting room in Redis: each web
// process's tick (TickQueues) walks it.
const queueActiveKey = "seckill:queue:active"

const (
	// QueueTick is how often each web process advances the waiting rooms
	// and sends their shoppers' sockets the changes.
	QueueTick = time.Second
	// QueueFallbackRate is the admissions a second of goods whose
	// queue_rate is 0 while this process has measured no more than that.
	QueueFallbackRate = 100
	// queueLinger is how long after its sale's end a waiting room stays ticked.
	queueLinger = time.Hour
)

// queueAdvanceLua is the advance every queue script starts with (see the
// comment above). ARGV: 1 now (unix ms), 2 the sale's start (unix ms), 3 the
// rate (admissions a second; "a<n>" for goods whose queue_rate is 0: the
// automatic rate the ticks keep in rn (queue_outflow.go), n before the
// first), 4 open (1: stock to sell, 0: none or the sale over, -1: unknown,
// keep the last), 5 the room's committed seed, used only by the call that
// passes the start. Returns n, F (nil before the start), A, closed, seed,
// rn (-1: none set).
//
// logJoins(q, jn, n0, n) appends "n:t" (scored n) to the join log q:jn
// when joins took n0 to n, t the log's last time or now, whichever is later
// (so the log's times never go back, whatever the callers' clocks).
const queueAdvanceLua = `
local function logJoins(q, jn, n0, n)
  if n <= n0 then return end
  local t = math.max(tonumber(ARGV[1]), tonumber(redis.call('HGET', q, 'jt')) or 0)
  redis.call('HSET', q, 'jt', t)
  redis.call('ZADD', jn, n, string.format('%d:%d', n, t))
end
local function advance(q, adv)
  local now, start, rate, open = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
  local m = redis.call('HMGET', q, 'n', 'F', 'A', 'r', 't', 'closed', 'seed', 'rn')
  local rn = tonumber(m[8])
  if rate == nil then rate = rn or tonumber(string.sub(ARGV[3], 2)) end
  local n = tonumber(m[1]) or 0
  local F = tonumber(m[2])
  local A = tonumber(m[3]) or 0
  local r = tonumber(m[4]) or 0
  local t = tonumber(m[5]) or 0
  local closed = m[6] == '1'
  local seed = m[7] or ''
  if F == nil and now >= start then
    F, A, r, t, seed = n, 0, 0, start, ARGV[5]
    redis.call('HSET', q, 'F', F, 'seed', seed)
  end
  local closed_next = closed
  if open == 0 then closed_next = true elseif open == 1 then closed_next = false end
  if F ~= nil then
    if now > t then
      if not closed and rate > 0 then
        local acc = r + (now - t) * rate
        local add = math.floor(acc / 1000)
        r = acc - add * 1000
        if A + add >= n then
          add = n - A
          r = 0
        end
        if add > 0 then
          A = A + add
          redis.call('ZADD', adv, A, string.format('%d:%d', A, now))
        end
      end
      t = now
    end
    redis.call('HSET', q, 'A', A, 'r', r, 't', t, 'closed', closed_next and '1' or '0')
  elseif closed_next ~= closed then
    redis.call('HSET', q, 'closed', closed_next and '1' or '0')
  end
  return n, F, A, closed_next, seed, rn or -1
end
`

// queueJoinScript joins shoppers to the waiting room, or looks their
// tickets up: the joins of a moment share one call (queueJoins).
//
// KEYS: q, q:u, q:adv, q:jn. ARGV: 1–5 as queueAdvanceLua, 6 the number of
// shoppers k, then per shopper i (from 0) at 7+2i: user, "1" to join.
// Returns {n, F, A, closed, seed, rn} after them all (F -1 before the start),
// then per shopper a code and j: "new" (joined now), "ok" (joined before),
// "none" (not joined, looking only) or "queue_closed" (closed to
// newcomers), j -1 when not joined.
var queueJoinScript = redis.NewScript(queueAdvanceLua + `
local n, F, A, closed, seed, rn = advance(KEYS[1], KEYS[3])
local k = tonumber(ARGV[6])
local users = {}
for i = 0, k - 1 do users[i + 1] = ARGV[7 + 2 * i] end
local js = redis.call('HMGET', KEYS[2], unpack(users))
local out, added = {}, {}
local n0 = n
for i = 0, k - 1 do
  local uid, j = users[i + 1], js[i + 1]
  if j then
    out[#out + 1] = 'ok'; out[#out + 1] = tonumber(j)
  elseif ARGV[8 + 2 * i] ~= '1' then
    out[#out + 1] = 'none'; out[#out + 1] = -1
  elseif closed then
    out[#out + 1] = 'queue_closed'; out[#out + 1] = -1
  else
    j = n
    n = n + 1
    js[i + 1] = j
    added[#added + 1] = uid
    added[#added + 1] = j
    out[#out + 1] = 'new'; out[#out + 1] = j
  end
end
if n > n0 then
  redis.call('HSET', KEYS[2], unpack(added))
  redis.call('HSET', KEYS[1], 'n', n)
  logJoins(KEYS[1], KEYS[4], n0, n)
end
local res = {n, F or -1, A, closed and 1 or 0, seed, rn}
for _, v in ipairs(out) do res[#res + 1] = v end
return res
`)

// queueTickScript advances the waiting room and sets whether it is open.
//
// KEYS: q, q:adv. ARGV as queueAdvanceLua, then 6 the automatic rate to
// keep from now ("" for none), set only when the last was set at least
// rateEvery before now (several processes tick each second: one decides).
// Returns {n, F, A, closed, seed, rn} (F -1 before the start).
var queueTickScript = redis.NewScript(queueAdvanceLua + `
local n, F, A, closed, seed, rn = advance(KEYS[1], KEYS[2])
if ARGV[6] and ARGV[6] ~= '' then
  local now = tonumber(ARGV[1])
  local rt = tonumber(redis.call('HGET', KEYS[1], 'rt'))
  if rt == nil or now - rt >= tonumber(ARGV[7]) or now < rt then
    rn = tonumber(ARGV[6])
    redis.call('HSET', KEYS[1], 'rn', rn, 'rt', now)
  end
end
return {n, F or -1, A, closed and 1 or 0, seed, rn}
`)

// queueView is a waiting room as a script returned it.
type queueView struct {
	n, f, a int64 // joined, shuffled at the start (-1: not started), admitted
	closed  bool
	seed    string
	rn      int64 // the automatic rate kept (-1: none)
}

// queueHead is how many values of a script's answer are the room's (parseQueueView).
const queueHead = 6

// place is the place of the shopper who joined j-th.
func (v queueView) place(j int64) int64 {
	if v.f < 0 || j >= v.f {
		return j
	}
	return shufflePlace(v.seed, v.f, j)
}

func parseQueueView(vals []any) (queueView, error) {
	if len(vals) < queueHead {
		return queueView{}, fmt.Errorf("queue script answered %v", vals)
	}
	var v queueView
	var ok [5]bool
	v.n, ok[0] = vals[0].(int64)
	v.f, ok[1] = vals[1].(int64)
	v.a, ok[2] = vals[2].(int64)
	var c int64
	c, ok[3] = vals[3].(int64)
	v.closed = c == 1
	v.seed, _ = vals[4].(string)
	v.rn, ok[4] = vals[5].(int64)
	if !ok[0] || !ok[1] || !ok[2] || !ok[3] || !ok[4] {
		return queueView{}, fmt.Errorf("queue script answered %v", vals)
	}
	return v, nil
}

// queues is this process's part of the waiting rooms: the goods' settings,
// briefly cached, the rooms it has put in the active set, the measure of
// its capacity, and what it last told the shoppers whose sockets it holds.
type queues struct {
	mu     sync.Mutex
	confs  map[int64]*queueConf
	active sync.Map             // goods ID → struct{}: added to queueActiveKey by this process
	seeds  sync.Map             // goods ID → the room's committed seed (queue_room.go)
	meters map[int64]*roomMeter // goods ID → this process's part of its outflow (queue_outflow.go)
	hook   grabHook
	local  map[int64]*localQueue
	meter  capacityMeter
	joins  joinBatcher
	paused atomic.Int64 // open rooms the health gate held at no outflow at this process's last tick
}

type queueConf struct {
	g    *model.Goods
	read time.Time
}

func newQueues() *queues {
	return &queues{confs: map[int64]*queueConf{}, local: map[int64]*localQueue{}, meters: map[int64]*roomMeter{}, joins: newJoinBatcher()}
}

// queueGoods returns the goods' row, read at most once per fairRefresh.
func (s *Service) queueGoods(ctx context.Context, goodsID int64) (*model.Goods, error) {
	if goodsID <= 0 || goodsID > goods.MaxID {
		return nil, db.Errorf(db.ENOTFOUND, "goods %d not found", goodsID)
	}
	q, now := s.queues, s.Now()
	q.mu.Lock()
	c := q.confs[goodsID]
	q.mu.Unlock()
	if c != nil && now.Sub(c.read) < fairRefresh && !now.Before(c.read) {
		return c.g, nil
	}
	g, err := s.Goods.GoodsRow(ctx, goodsID)
	if err != nil {
		if c != nil && db.ErrorCode(err) != db.ENOTFOUND { // the store is away: go on with what was read last
			return c.g, nil
		}
		return nil, err
	}
	q.mu.Lock()
	if len(q.confs) > 100_000 {
		q.confs = map[int64]*queueConf{}
	}
	q.confs[goodsID] = &queueConf{g: g, read: now}
	q.mu.Unlock()
	return g, nil
}

// queueRate is the goods' queue_rate, or for an automatic outflow its
// target as this process last read it (queue_outflow.go), and whether it is measured.
func (s *Service) queueRate(g *model.Goods) (int64, bool) {
	if g.QueueRate > 0 {
		return int64(g.QueueRate), false
	}
	m := s.queues.meterOf(g.ID)
	m.mu.Lock()
	t := m.target
	m.mu.Unlock()
	if t > 0 {
		return t, true
	}
	return max(s.queues.meter.peak(), QueueFallbackRate), true
}

// queueArgs are queueAdvanceLua's ARGV: the seed is the room's committed
// one (queue_room.go), sent only from the start, the one call that may
// pass it: before, no join carries it, so no Redis log or monitor shows it
// while places can still be timed against it.
func (s *Service) queueArgs(ctx context.Context, g *model.Goods, now time.Time, open int) ([]any, error) {
	seed, err := s.roomSeed(ctx, g.ID)
	if err != nil {
		return nil, err
	}
	if now.Before(g.StartAt) {
		seed = ""
	}
	var rate any = g.QueueRate
	if automatic(g) { // the rate the ticks keep, the target before the first
		r, _ := s.queueRate(g)
		rate = "a" + strconv.FormatInt(r, 10)
	}
	return []any{now.UnixMilli(), g.StartAt.UnixMilli(), rate, open, seed}, nil
}

// openOf is the advance's open argument for goods with remaining stock at
// now (the tick knows the stock; a join does not, and keeps the last).
func openOf(g *model.Goods, now time.Time) int {
	if !now.Before(g.EndAt) || g.Remaining <= 0 {
		return 0
	}
	return 1
}

// shopperGoods returns goods a shopper may queue for: listed, in mode queue.
func (s *Service) shopperGoods(ctx context.Context, goodsID int64) (*model.Goods, error) {
	g, err := s.queueGoods(ctx, goodsID)
	if err != nil {
		return nil, err
	}
	if !g.Listed() {
		return nil, db.Errorf(db.ENOTFOUND, "goods %d not found", goodsID)
	}
	if err := goods.NotSoldBy(g, model.ModeQueue); err != nil {
		return nil, err
	}
	return g, nil
}

// JoinQueue puts the shopper in the goods' waiting room, after the same
// Admit check as a grab (proof of work, pre-registration), and returns the
// ticket; created is false when the shopper had joined before (the same
// ticket, and no proof asked or spent).
func (s *Service) JoinQueue(ctx context.Context, userID, goodsID int64, pow string) (t *model.Ticket, created bool, err error) {
	g, err := s.shopperGoods(ctx, goodsID)
	if err != nil {
		return nil, false, err
	}
	if !s.Now().Before(g.EndAt) {
		return nil, false, db.ErrQueueClosed
	}
	_, sn, err := s.fairSettings(ctx, goodsID)
	if err != nil {
		return nil, false, err
	}
	if max(sn.bits, s.floor()) > 0 || sn.prereg { // the floor asks a proof of goods that ask none, as the grab's Admit does
		// One who holds a ticket gets it back without a proof of work; one
		// whose admission went unused joins again, as a newcomer does.
		if t, _, lapsed, err := s.queueTicket(ctx, g, userID, false); err == nil && !lapsed {
			return t, false, nil
		} else if err != nil && db.ErrorCode(err) != db.ENOTFOUND {
			return nil, false, err
		}
		if err := s.Admit(ctx, userID, goodsID, pow); err != nil {
			return nil, false, err
		}
	}
	t, created, _, err = s.queueTicket(ctx, g, userID, true)
	if err != nil {
		return nil, false, err
	}
	if err := s.markActive(ctx, goodsID); err != nil {
		return nil, false, err
	}
	return t, created, nil
}

// markActive puts the goods' room in the set the ticks walk, once per process.
func (s *Service) markActive(ctx context.Context, goodsID int64) error {
	if _, known := s.queues.active.Load(goodsID); known {
		return nil
	}
	if err := s.Redis.SAdd(ctx, queueActiveKey, goodsID).Err(); err != nil {
		return err
	}
	s.queues.active.Store(goodsID, struct{}{})
	return nil
}

// QueueTicket returns the shopper's ticket in the goods' waiting room; not
// found when the shopper has not joined.
func (s *Service) QueueTicket(ctx context.Context, userID, goodsID int64) (*model.Ticket, error) {
	g, err := s.shopperGoods(ctx, goodsID)
	if err != nil {
		return nil, err
	}
	t, _, _, err := s.queueTicket(ctx, g, userID, false)
	return t, err
}

// queueTicket joins the shopper (when join) or looks their ticket up,
// in a call shared with the other joins of the moment, and makes the ticket.
// A shopper whose admission went unused (lapsed: their ticket reads closed
// while the room is open) joins again at the back of the line when join is
// set, and their ticket is a new one (created).
func (s *Service) queueTicket(ctx context.Context, g *model.Goods, userID int64, join bool) (t *model.Ticket, created, lapsed bool, err error) {
	r, err := s.queues.joins.do(ctx, s, g, userID, join)
	if err != nil {
		return nil, false, false, err
	}
	t, lapsed, err = s.ticketFrom(ctx, g, userID, r)
	if err == nil && lapsed && join {
		if r, err = s.rejoinQueue(ctx, g, userID, r.j); err == nil {
			t, lapsed, err = s.ticketFrom(ctx, g, userID, r)
		}
	}
	if err != nil {
		return nil, false, false, err
	}
	return t, r.code == "new", lapsed, nil
}

// ticketFrom makes the ticket of a join script's answer r, and tells
// whether the shopper's admission went unused while the room is open.
func (s *Service) ticketFrom(ctx context.Context, g *model.Goods, userID int64, r joinResult) (*model.Ticket, bool, error) {
	switch r.code {
	case "none":
		return nil, false, db.Errorf(db.ENOTFOUND, "you have not joined the queue of goods %d", g.ID)
	case "queue_closed":
		return nil, false, db.ErrQueueClosed
	}
	now := s.Now()
	var admitAt time.Time
	if p := r.view.place(r.j); r.j >= 0 && p < r.view.a && !r.view.closed {
		var err error
		if admitAt, err = s.admittedAt(ctx, g.ID, p); err != nil {
			return nil, false, err
		}
	}
	t := s.ticketOf(g, r.view, userID, r.j, admitAt, now)
	s.queues.remember(g.ID, userID, r.j, admitAt, t, now)
	return &t, t.Lapsed, nil
}

// queueRejoinScript puts a shopper whose admission went unused at the back
// of the waiting room: their order j becomes n, as for one who joins now
// (after the start, so their place is j). Only while their j is still the
// one read, so two calls for one lapse move them once.
//
// KEYS: q, q:u, q:adv, q:jn. ARGV: 1–5 as queueAdvanceLua, 6 the user, 7 their j as read.
// Returns {n, F, A, closed, seed, rn} after the call, then a code and j: "new"
// (in line again at j), "ok" (moved by another call before: their j now)
// or "queue_closed" (j -1).
var queueRejoinScript = redis.NewScript(queueAdvanceLua + `
local n, F, A, closed, seed, rn = advance(KEYS[1], KEYS[3])
local j = tonumber(redis.call('HGET', KEYS[2], ARGV[6]))
local code = 'ok'
if j == nil or j ~= tonumber(ARGV[7]) then
  j = j or -1
elseif closed then
  code, j = 'queue_closed', -1
else
  j, n, code = n, n + 1, 'new'
  redis.call('HSET', KEYS[2], ARGV[6], j)
  redis.call('HSET', KEYS[1], 'n', n)
  logJoins(KEYS[1], KEYS[4], j, n)
end
return {n, F or -1, A, closed and 1 or 0, seed, rn, code, j}
`)

// rejoinQueue runs queueRejoinScript for the shopper who joined j-th.
func (s *Service) rejoinQueue(ctx context.Context, g *model.Goods, userID, j int64) (joinResult, error) {
	args, err := s.queueArgs(ctx, g, s.Now(), -1)
	if err != nil {
		return joinResult{}, err
	}
	args = append(args, userID, j)
	dctx, durable := s.Durable(ctx) // the place is told to its shopper
	res, err := queueRejoinScript.Run(dctx, durable, []string{queueKey(g.ID), queueUsersKey(g.ID), queueAdvKey(g.ID), queueJoinLogKey(g.ID)}, args...).Slice()
	if err == nil && len(res) != queueHead+2 {
		err = fmt.Errorf("the rejoin script answered %v", res)
	}
	var v queueView
	if err == nil {
		v, err = parseQueueView(res[:queueHead])
	}
	if err != nil {
		return joinResult{}, fmt.Errorf("join the queue of goods %d again: %w", g.ID, err)
	}
	code, _ := res[queueHead].(string)
	nj, _ := res[queueHead+1].(int64)
	return joinResult{code: code, j: nj, view: v}, nil
}

// admittedAt is when place p of the goods' waiting room was admitted.
func (s *Service) admittedAt(ctx context.Context, goodsID, p int64) (time.Time, error) {
	ms, err := s.Redis.ZRangeByScore(ctx, queueAdvKey(goodsID), &redis.ZRangeBy{Min: "(" + strconv.FormatInt(p, 10), Max: "+inf", Count: 1}).Result()
	if err != nil {
		return time.Time{}, fmt.Errorf("read when place %d was admitted: %w", p, err)
	}
	return admitTimeOf(ms, s.Now()), nil
}

// admitTimeOf reads the time of a q:adv member ("A:t"), or def.
func admitTimeOf(members []string, def time.Time) time.Time {
	if len(members) == 0 {
		return def
	}
	_, t, _ := strings.Cut(members[0], ":")
	ms, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return def
	}
	return time.UnixMilli(ms)
}

// ticketOf is the ticket of the shopper userID who joined j-th, from the waiting
// room's view v at now; admitAt is when their place was admitted (when it was).
func (s *Service) ticketOf(g *model.Goods, v queueView, userID, j int64, admitAt time.Time, now time.Time) model.Ticket {
	t := model.Ticket{GoodsID: g.ID}
	rate := s.etaRate(g, v)
	etaOf := func(ahead int64) int64 { return (ahead + rate - 1) / rate }
	switch {
	case v.closed || !now.Before(g.EndAt):
		t.State = model.TicketClosed
	case j < 0: // admitted at once by a priority code, until -j (queue_codes.go)
		until := time.UnixMilli(-j)
		if !now.Before(until) {
			t.State = model.TicketClosed
			break
		}
		u := until.UTC()
		t.State, t.AdmittedUntil = model.TicketAdmitted, &u
		t.Admission = admissionToken(s.powKey(), g.ID, userID, until)
	case v.f < 0: // before the start: the place is drawn then, among those who joined so far
		t.State, t.Position, t.JoinNumber = model.TicketWaiting, v.n, j+1
		t.ETASeconds = int64((g.StartAt.Sub(now)+time.Second-1)/time.Second) + etaOf(v.n)
	default:
		p := v.place(j)
		if p >= v.a {
			t.State, t.Position, t.JoinNumber, t.Place = model.TicketWaiting, p-v.a+1, j+1, p+1
			t.ETASeconds = etaOf(t.Position)
			break
		}
		until := admitAt.Add(admissionFor(g))
		if !now.Before(until) { // the admission went unused
			t.State = model.TicketClosed
			break
		}
		u := until.UTC()
		t.State, t.AdmittedUntil, t.JoinNumber, t.Place = model.TicketAdmitted, &u, j+1, p+1
		t.Admission = admissionToken(s.powKey(), g.ID, userID, until)
	}
	// Closed while the room is open: the shopper's admission ran out unused.
	t.Lapsed = t.State == model.TicketClosed && !v.closed && now.Before(g.EndAt)
	return t
}
