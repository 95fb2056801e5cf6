package sale

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/groupcommit"
	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/db/rdb"
)

// MaxGrabBatch is the most grabs one call of grabBatchScript decides.
const MaxGrabBatch = 32

// grabBatchesInFlight is how many calls of one Bucket may be in flight at
// once: with one, a spike's grabs of a goods would go at most MaxGrabBatch
// a round trip; the pipeliner sends the calls of a moment in one write.
const grabBatchesInFlight = 2

// grabBatchScript decides several grabs of one Bucket in one call: the
// same decision as grabScript's, grab by grab in arrival order, each with
// its own user, time and expiry (so its own limit and window). Reads the
// grabs share (the goods' info, the sequence, the fresh count, the free
// list's length, a user's limit mark and list) happen once, and the writes
// of the wins go out together at the end: one HSET of the orders, one
// RPUSH to the flush queue, one ZADD of the deadlines.
//
// The whole reply is remembered under KEYS[11] (the batch's memo key, under
// the bucket's hash tag) once anything was sold, so when go-redis runs the
// command again after a lost reply the same orders come back and no unit
// is taken twice.
//
// KEYS: scriptKeys (of the Bucket), then 11 the batch's memo key
// ARGV: 1 the goods' Bucket count as the caller knows it, 2 '1' on a Redis
// Cluster, 3 memo TTL ms, 4 the number of grabs n, then per grab i (from
// 0) at 5+3i: user ID, now ms, expiry ms.
// Returns a word the whole batch gets (not_loaded | moved | reshard | hidden:
// see grabScript), or "Remaining:Slot:version" and then one line per grab,
// joined by "\n": a word (not_started | ended | limit_reached | reserve |
// sold_out | dry) or "ok:record". The remaining stock is the bucket's after
// the batch.
var grabBatchScript = redis.NewScript(GoodsLua + `
local memo = redis.call('GET', KEYS[11])
if memo then return memo end
local info, word = saleInfo(ARGV[2], ARGV[1])
if not info then return word end
local shards = tonumber(info[6]) or 1
local start, stop, limit = tonumber(info[1]), tonumber(info[2]), tonumber(info[4])
local ceil, base = tonumber(info[9]), tonumber(info[7])
local seq = tonumber(redis.call('GET', K_SEQ)) or 0
local fresh = tonumber(redis.call('GET', K_FRESH)) or 0
local fresh0, nfree = fresh, redis.call('LLEN', K_FREE)
local n = tonumber(ARGV[4])
-- the limit marks of the batch's users, read at once
local held, users = {}, {}
for i = 0, n - 1 do
	local uid = ARGV[5 + 3 * i]
	if not held[uid] then held[uid] = true; users[#users + 1] = uid end
end
local marks = redis.call('HMGET', K_HELD, unpack(users))
for j, uid in ipairs(users) do held[uid] = tonumber(marks[j]) or 0 end
local orders, deadlines, pending = {}, {}, {}
local seqs, winners = {}, {} -- per user the sequences the batch gave them
local out, wins = {}, 0
for i = 0, n - 1 do
	local uid, now, exp = ARGV[5 + 3 * i], tonumber(ARGV[6 + 3 * i]), ARGV[7 + 3 * i]
	local res
	if now < start then res = 'not_started'
	elseif now >= stop then res = 'ended'
	else
		local h = held[uid]
		if h >= limit then res = 'limit_reached'
		elseif ceil and seq >= ceil then res = 'reserve'
		else
			local unit = false
			if nfree > 0 then unit = redis.call('RPOP', K_FREE); nfree = nfree - 1 end
			if not unit then
				if fresh <= 0 then
					nfree = 0
					res = shards > 1 and 'dry' or 'sold_out'
				else
					unit = tostring(fresh + (base or 0)) -- the bucket's units start after base
					fresh = fresh - 1
				end
			end
			if unit then
				seq = seq + 1
				local rec = orderRecord({[F_SEQ] = seq, [F_USER] = uid, [F_UNIT] = unit, [F_AMOUNT] = info[3], [F_STATUS] = 'unpaid',
					[F_CREATED] = ARGV[6 + 3 * i], [F_EXPIRES] = exp, [F_VERSION] = 1, [F_UPDATED] = ARGV[6 + 3 * i]})
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
if wins > 0 then redis.call('SET', KEYS[11], reply, 'PX', ARGV[3]) end
return reply
`)

// grabBatcher groups the concurrent grabs of each Bucket into batches
// (group commit): a grab that finds fewer than grabBatchesInFlight calls
// of its Bucket in flight runs at once, alone; grabs that arrive while they
// are in flight wait for one to end and go together in the next call, up
// to MaxGrabBatch. Nothing waits on a timer: the window is the call in flight.
type grabBatcher struct {
	group *groupcommit.Group[Bucket, batchedGrab, grabOutcome]

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

// grabOutcome is one grab's answer from its batch.
type grabOutcome struct {
	a        answer
	err      error
	stockOut bool // the batch's stock event went out: the grab sends none
}

// grabBatched decides one grab of Bucket home (the goods' Bucket count k)
// in a batch with the grabs of the same Bucket that arrive meanwhile. Its
// answer reads as grabScript's; code "dry" goes on to grabElsewhere.
func (s *Sale) grabBatched(ctx context.Context, home Bucket, userID int64, now time.Time) (answer, bool, error) {
	// A grab waits for its batch even when its caller leaves: once queued
	// it may be sold, and the caller that runs a batch answers the others.
	o, err := s.batches.group.Do(context.WithoutCancel(ctx), home, batchedGrab{user: userID, now: now})
	if err != nil {
		return answer{}, false, err
	}
	return o.a, o.stockOut, o.err
}

// runGrabBatch runs grabBatchScript for grabs and reads each one's answer,
// sending the bucket's stock once for the batch.
func (s *Sale) runGrabBatch(ctx context.Context, home Bucket, grabs []batchedGrab) ([]grabOutcome, error) {
	s.batches.calls.Add(1)
	s.batches.grabs.Add(int64(len(grabs)))
	if home.K > 1 {
		c := s.trips.count(home.Goods)
		c.grabs.Add(int64(len(grabs)))
		c.trips.Add(1)
	}
	args := make([]any, 0, 4+3*len(grabs))
	args = append(args, home.K, s.ClusterFlag(), grabMemoTTL.Milliseconds(), len(grabs))
	for _, g := range grabs {
		args = append(args, g.user, g.now.UnixMilli(), g.now.Add(s.OrderTTL).UnixMilli())
	}
	res, err := s.Eval(ctx, grabBatchScript, ScriptKeys(home, MemoKey(home, rdb.NewRequestID())), args...).Text()
	if err != nil {
		return nil, err
	}
	out := make([]grabOutcome, len(grabs))
	if err := s.readGrabBatch(home, res, out); err != nil {
		return nil, err
	}
	return out, nil
}

// readGrabBatch reads grabBatchScript's reply into the grabs' answers and
// sends the stock event of the batch when it sold anything.
func (s *Sale) readGrabBatch(home Bucket, res string, grabs []grabOutcome) error {
	head, rest, many := strings.Cut(res, "\n")
	if !many { // the batch's one word
		for i := range grabs {
			grabs[i].a = answer{Code: res}
		}
		return nil
	}
	f := strings.SplitN(head, ":", 3)
	if len(f) != 3 {
		return fmt.Errorf("grab goods %d: unreadable batch answer %q", home.Goods, head)
	}
	remaining, err1 := strconv.ParseInt(f[0], 10, 64)
	slot, err2 := strconv.ParseInt(f[1], 10, 64)
	version, err3 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return fmt.Errorf("grab goods %d: unreadable batch answer %q", home.Goods, head)
	}
	lines := strings.Split(rest, "\n")
	if len(lines) != len(grabs) {
		return fmt.Errorf("grab goods %d: batch answer has %d lines for %d grabs", home.Goods, len(lines), len(grabs))
	}
	// What each win pays besides the script is done here once for the
	// batch: its order read and encoded (once, for the answer and the live
	// event), the stock event, the order events handed to the publisher
	// together, and the journal of acknowledged orders (journal.go; the ledger's phantoms.go reads it) under
	// one lock.
	var events []live.Message
	var acks []Acked
	var at time.Time
	for i := range grabs {
		g := &grabs[i]
		rec, ok := strings.CutPrefix(lines[i], "ok:")
		if !ok {
			g.a = answer{Code: lines[i]}
			continue
		}
		g.a = answer{Code: "ok", Remaining: remaining, Slot: slot, Version: version, Rec: rec}
		o, err := ParseOrderRecord(home.Goods, rec)
		var enc []byte
		if err == nil {
			enc, err = o.MarshalJSON()
		}
		if err != nil { // sold, but unreadable here: the grab says so; the flush has the order
			g.err = err
			continue
		}
		g.a.win = &batchWin{order: o, json: enc}
		if events == nil {
			events, acks, at = make([]live.Message, 0, len(grabs)), make([]Acked, 0, len(grabs)), time.Now()
		}
		events = append(events, orderEvent(o, enc))
		acks = append(acks, Acked{at: at, GoodsID: home.Goods, Rec: rec})
	}
	if len(acks) > 0 {
		s.PushStock(home, slot, remaining, version)
		for i := range grabs {
			grabs[i].stockOut = true
		}
		s.Events.SendAll(events)
		s.Acks.add(acks...)
	}
	return nil
}
