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
	"github.com/seckill/seckill/db/model"
)

// The automatic outflow of goods whose queue_rate is 0: the waiting room
// lets shoppers in at what the sale absorbs, and slows down to a pause
// while the grabs answer slowly or fail, then recovers.
//
//   - The health signal: every grab of queued goods that passed the gate is
//     timed on the service's clock (Pass's done) and counted per second in
//     this process's memory: grabs, slow ones (over SlowGrab), failed ones
//     (a 503: the store or Redis did not answer, or an internal error).
//     Each tick adds this process's counts to the room's per-second hashes
//     in Redis ({g}:q:h:<unix second>), so every process reads one window of
//     HealthWindow over all of them.
//   - The rate: each tick, nextRate takes the room's last rate (rn in q),
//     the target and the window: more than 1% of grabs slow (the p99 over
//     250 ms) or failed halves the rate, more than 5% pauses it; a healthy
//     window doubles it back up to the target (from a tenth of it after a
//     pause). The tick script keeps the new rate in q for every process's
//     advance, decided at most once per rateEvery whoever ticks.
//   - The target is what the sale absorbs: the most grabs answered in one
//     second (in the window, over every process, or this process's minute),
//     at least QueueFallbackRate, divided by the share of admissions that
//     get used (1 − the no-show ratio, at least a half): shoppers who do not
//     come leave room for more.
//   - No-shows: each grab's admission (its until) is logged in q:used; an
//     admission whose time ran out is a no-show unless it is there:
//     no_shows = places admitted by now − admissionSeconds + priority
//     admissions run out − used admissions run out.

const (
	// HealthWindow is the window the grabs' health is judged over.
	HealthWindow = 10 * time.Second
	// SlowGrab is the answer time over which a grab counts as slow.
	SlowGrab = 250 * time.Millisecond
	// rateEvery is the least time between two decisions of a room's rate.
	rateEvery = 900 * time.Millisecond
	// healthTTL is how long a second's counts stay in Redis.
	healthTTL = 2 * time.Minute
	// waitSamples is how many admitted places the actual wait's median is read from.
	waitSamples = 51
)

func queueHealthKey(goodsID, sec int64) string {
	return queueKey(goodsID) + ":h:" + strconv.FormatInt(sec, 10)
}
func queueUsedKey(goodsID int64) string { return queueKey(goodsID) + ":used" }

// grabCounts are one second's grabs of a room.
type grabCounts struct{ grabs, slow, failed int64 }

// roomMeter is this process's part of one room's outflow: the counts not
// yet added to Redis, the admissions used, and what the last tick read.
type roomMeter struct {
	mu      sync.Mutex
	pending map[int64]*grabCounts // unix second → counts
	used    []redis.Z             // "user:until" scored until
	target  int64                 // the last tick's target (0: none yet)
}

func (q *queues) meterOf(goodsID int64) *roomMeter {
	q.mu.Lock()
	defer q.mu.Unlock()
	m := q.meters[goodsID]
	if m == nil {
		m = &roomMeter{pending: map[int64]*grabCounts{}}
		q.meters[goodsID] = m
	}
	return m
}

// grabHook, when set (tests: SetGrabHook), runs as a queued grab ends,
// before its time is taken: latency injected into the grab path.
type grabHook = atomic.Pointer[func()]

// SetGrabHook runs hook (nil: none) as each grab of queued goods ends,
// before its time is taken: latency injected into the grab path. The load
// bench slows an in-process server's grabs with it (cmd/seckill/bench/scenarios/fair_outflow.go),
// its tests by moving the injected clock there.
func (s *Service) SetGrabHook(hook func()) {
	if hook == nil {
		s.queues.hook.Store(nil)
		return
	}
	s.queues.hook.Store(&hook)
}

// grabDone records a queued goods' grab that passed the gate at start and
// ended with err: its time and outcome for the health, its admission as used.
func (s *Service) grabDone(goodsID, userID int64, admission string, start time.Time, err error) {
	if h := s.queues.hook.Load(); h != nil {
		(*h)()
	}
	now := s.Now()
	m := s.queues.meterOf(goodsID)
	m.mu.Lock()
	defer m.mu.Unlock()
	sec := now.Unix()
	c := m.pending[sec]
	if c == nil {
		if len(m.pending) > 600 { // no tick for ten minutes: keep memory bounded
			clear(m.pending)
		}
		c = &grabCounts{}
		m.pending[sec] = c
	}
	c.grabs++
	if now.Sub(start) > SlowGrab {
		c.slow++
	}
	if code := db.ErrorCode(err); code == db.EUNAVAILABLE || code == db.EINTERNAL {
		c.failed++
	}
	if i := strings.LastIndexByte(admission, '.'); i > 0 && len(m.used) < 1_000_000 {
		if f := strings.Split(admission[:i], "."); len(f) == 3 {
			if until, perr := strconv.ParseInt(f[2], 10, 64); perr == nil {
				m.used = append(m.used, redis.Z{Score: float64(until), Member: strconv.FormatInt(userID, 10) + ":" + f[2]})
			}
		}
	}
}

// outflowRead is one tick's (or the merchant's) read of a room's flows.
type outflowRead struct {
	win       grabCounts // over the window, every process
	peak      int64      // the most grabs of one second in the window
	joinedWin int64      // n at the window's start
	admitWin  int64      // A at the window's start
	expired   int64      // admissions whose time has run out: places and priority codes
	used      int64      // of them, used
	waitP50   time.Duration
	waited    bool  // waitP50 was measured (someone was admitted)
	rn        int64 // the automatic rate kept (-1: none)
}

// noShows is the admissions that ran out unused.
func (r outflowRead) noShows() int64 { return max(r.expired-r.used, 0) }

// bad is the share of the window's grabs that were slow or failed, the worse.
func (r outflowRead) bad() float64 {
	if r.win.grabs == 0 {
		return 0
	}
	return float64(max(r.win.slow, r.win.failed)) / float64(r.win.grabs)
}

// nextRate is the automatic rate after last (-1: none yet) toward target,
// given the share of bad grabs in the window: over 5% pauses (0), over 1%
// halves, else it doubles back up to the target, from a tenth of it after
// a pause.
func nextRate(last, target int64, bad float64) int64 {
	switch {
	case last < 0:
		last = target
	case bad > 0.05:
		return 0
	case bad > 0.01:
		return last / 2
	case last == 0:
		return max(target/10, 1)
	}
	return min(max(last*2, 1), target)
}

// target is the automatic rate's aim: what the sale absorbed at its best,
// at least QueueFallbackRate, raised by the no-shows' share (capped at ×2).
func (s *Service) outflowTarget(r outflowRead) int64 {
	t := max(r.peak, s.queues.meter.peak(), QueueFallbackRate)
	if r.expired > 0 {
		shows := 1 - min(float64(r.noShows())/float64(r.expired), 0.5)
		t = int64(float64(t) / shows)
	}
	return t
}

// queueFlowsScript reads a room's flows. KEYS: q, q:adv, q:jn, q:pri,
// q:used. ARGV: 1 now (unix ms), 2 the window's start (unix ms), 3 the
// moment before which admissions have run out (now − admission_seconds,
// unix ms), 4 the sale's start (unix ms), 5 how many admitted places to
// sample the actual wait over. Returns {A at the window's start, n at the
// window's start, places admitted before ARGV[3], priority admissions run
// out, used admissions run out, the actual wait's median in ms (-1: none),
// the automatic rate kept (-1: none)}.
//
// at(key, t) is the value (score) of the log's last entry "v:t'" with t' ≤
// t, by bisection (both logs grow in v and t alike); timeOf(key, p) is when
// the log first went past p.
var queueFlowsScript = redis.NewScript(`
local function timeOfMember(m) return tonumber(string.match(m, ':(%d+)$')) end
local function at(key, t)
  local lo, hi, best = 0, redis.call('ZCARD', key) - 1, 0
  while lo <= hi do
    local mid = math.floor((lo + hi) / 2)
    local m = redis.call('ZRANGE', key, mid, mid, 'WITHSCORES')
    if timeOfMember(m[1]) <= t then
      best = tonumber(m[2])
      lo = mid + 1
    else
      hi = mid - 1
    end
  end
  return best
end
local function timeOf(key, p)
  local m = redis.call('ZRANGEBYSCORE', key, '(' .. p, '+inf', 'LIMIT', 0, 1)
  if #m == 0 then return nil end
  return timeOfMember(m[1])
end
local now, from, ran, start, k = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local m = redis.call('HMGET', KEYS[1], 'A', 'F', 'rn')
local A, F = tonumber(m[1]) or 0, tonumber(m[2]) or 0
local waits = {}
if A > 0 then
  for i = 0, math.min(k, A) - 1 do
    local p = math.floor(i * A / math.min(k, A))
    local adm = timeOf(KEYS[2], p)
    local joined = start
    if p >= F then joined = timeOf(KEYS[3], p) end
    if adm and joined then waits[#waits + 1] = math.max(adm - math.max(joined, start), 0) end
  end
end
local p50 = -1
if #waits > 0 then
  table.sort(waits)
  p50 = waits[math.floor((#waits + 1) / 2)]
end
return {at(KEYS[2], from), at(KEYS[3], from), at(KEYS[2], ran),
  redis.call('ZCOUNT', KEYS[4], '-inf', now), redis.call('ZCOUNT', KEYS[5], '-inf', now), p50, tonumber(m[3]) or -1}
`)

// readOutflow adds this process's pending counts of the room to Redis and
// reads its flows at now (waits: sample the actual wait too).
func (s *Service) readOutflow(ctx context.Context, g *model.Goods, now time.Time, waits bool) (outflowRead, error) {
	m := s.queues.meterOf(g.ID)
	m.mu.Lock()
	pending, used := m.pending, m.used
	m.pending, m.used = map[int64]*grabCounts{}, nil
	m.mu.Unlock()

	pipe := s.Redis.Pipeline()
	for sec, c := range pending {
		k := queueHealthKey(g.ID, sec)
		pipe.HIncrBy(ctx, k, "n", c.grabs)
		pipe.HIncrBy(ctx, k, "s", c.slow)
		pipe.HIncrBy(ctx, k, "e", c.failed)
		pipe.Expire(ctx, k, healthTTL)
	}
	if len(used) > 0 {
		pipe.ZAdd(ctx, queueUsedKey(g.ID), used...)
	}
	secs := int64(HealthWindow / time.Second)
	last := now.Unix()
	reads := make([]*redis.SliceCmd, 0, secs)
	for sec := last - secs + 1; sec <= last; sec++ {
		reads = append(reads, pipe.HMGet(ctx, queueHealthKey(g.ID, sec), "n", "s", "e"))
	}
	samples := 0
	if waits {
		samples = waitSamples
	}
	keys := []string{queueKey(g.ID), queueAdvKey(g.ID), queueJoinLogKey(g.ID), queuePriorityKey(g.ID), queueUsedKey(g.ID)}
	flows := queueFlowsScript.Eval(ctx, pipe, keys, now.UnixMilli(), now.Add(-HealthWindow).UnixMilli(),
		now.Add(-admissionFor(g)).UnixMilli(), g.StartAt.UnixMilli(), samples)
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		m.giveBack(pending, used)
		return outflowRead{}, fmt.Errorf("read the flows of waiting room %d: %w", g.ID, err)
	}
	var r outflowRead
	for _, rd := range reads {
		vals := rd.Val()
		var c [3]int64
		for i := range c {
			if str, ok := vals[i].(string); ok {
				c[i], _ = strconv.ParseInt(str, 10, 64)
			}
		}
		r.win.grabs += c[0]
		r.win.slow += c[1]
		r.win.failed += c[2]
		r.peak = max(r.peak, c[0])
	}
	vals, err := flows.Int64Slice()
	if err != nil || len(vals) != 7 {
		return outflowRead{}, fmt.Errorf("read the flows of waiting room %d: %v %w", g.ID, vals, err)
	}
	r.admitWin, r.joinedWin = vals[0], vals[1]
	r.expired, r.used = vals[2]+vals[3], vals[4]
	if vals[5] >= 0 {
		r.waitP50, r.waited = time.Duration(vals[5])*time.Millisecond, true
	}
	r.rn = vals[6]
	return r, nil
}

// giveBack returns counts a failed flush took, for the next tick.
func (m *roomMeter) giveBack(pending map[int64]*grabCounts, used []redis.Z) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for sec, c := range pending {
		if d := m.pending[sec]; d != nil {
			d.grabs, d.slow, d.failed = d.grabs+c.grabs, d.slow+c.slow, d.failed+c.failed
		} else {
			m.pending[sec] = c
		}
	}
	m.used = append(m.used, used...)
}

// automatic tells whether the goods' outflow is automatic (queue_rate 0).
func automatic(g *model.Goods) bool { return g.QueueRate <= 0 }

// rateNow is the admissions a second the room runs at now: the goods'
// queue_rate, or the automatic rate kept (the target before the first).
func (s *Service) rateNow(g *model.Goods, v queueView) int64 {
	if !automatic(g) {
		return int64(g.QueueRate)
	}
	if v.rn >= 0 {
		return v.rn
	}
	r, _ := s.queueRate(g)
	return r
}

// etaRate is the rate the ETAs count on: the rate now, or while paused the
// target the room recovers toward.
func (s *Service) etaRate(g *model.Goods, v queueView) int64 {
	if r := s.rateNow(g, v); r > 0 {
		return r
	}
	r, _ := s.queueRate(g)
	return max(r, 1)
}
