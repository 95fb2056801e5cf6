package sale

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/lifecycle"
	"github.com/seckill/seckill/db/rdb"
)

// Refusals from memory. In a sale nearly every grab arrives after the item
// is gone, so each web process remembers what the grab script told it about
// goods it cannot sell now (sold out, not started, ended, a shopper at the
// limit) and answers those grabs itself, without Redis.
//
// What it learnt is tied to the goods' epoch in this process, a counter
// bumped whenever the process hears that the sale changed: a unit came back
// (expiry, cancel, refund, a failed pay, a unit one grab brought to its home
// bucket and could not use) or the merchant changed the window or the terms.
// A refusal counts only while the epoch it was asked under is the current
// one; the epoch is read before the grab script runs, so an answer that
// reaches the process after a newer "back" (a late sold out) is stale at
// once and never hides the unit.
//
// Changes are heard two ways: the process that made one publishes the goods'
// ID on SaleChannel (every process follows it), and every script that gives
// a unit back or changes the window bumps the bucket's info field 'back'
// in the same script, which each process polls (one pipelined read of the
// goods it answered from memory lately, every SaleMemoPoll): a lost message,
// a reconnect or a publisher that died before publishing is found within a
// poll by itself.

// SaleChannel carries the ID of goods whose sale changed to every web process.
const SaleChannel = "seckill:goods:sale"

// SaleMemoPoll is how often a process reads the 'back' counters of goods it
// answers refusals for from memory: the longest a missed message can hide a unit.
const SaleMemoPoll = 400 * time.Millisecond

// saleMemoIdle is how long goods stay polled after their last refusal from memory.
const saleMemoIdle = 5 * time.Second

// saleChannelOf is SaleChannel for c (rdb.PerDatabase).
func saleChannelOf(c redis.UniversalClient) string { return rdb.PerDatabase(c, SaleChannel) }

// saleMemo is what this process knows about one goods' sale. Each mark holds
// the epoch+1 it was learnt under (0: not known).
type saleMemo struct {
	epoch      atomic.Int64
	soldOut    atomic.Int64
	ended      atomic.Int64
	notStarted atomic.Pointer[startMemo]
	limit      sync.Map      // user ID → epoch+1 the user was at the limit
	won        wonSet        // users who won here, whatever changed since; Redis tells limit_reached from sold_out for them
	used       atomic.Int64  // unix ns of the last grab that met this memo
	ready      atomic.Bool   // base is read: only answers asked after it may be learnt
	readyCh    chan struct{} // closed when base is read or could not be

	base []string // each bucket's 'back' as last read: by baseline, then by the poller alone
}

type startMemo struct{ mark, startMS int64 }

// wonSet is the users who won goods here. Every win adds one, so it is a
// plain map under a lock: a sync.Map allocates a node per new key, and
// this set only ever meets new keys. Once the goods is sold out nothing
// writes it and every refusal reads it: readers share the lock.
type wonSet struct {
	mu sync.RWMutex
	m  map[int64]struct{}
}

func (w *wonSet) add(userID int64) {
	w.mu.Lock()
	if w.m == nil {
		w.m = map[int64]struct{}{}
	}
	w.m[userID] = struct{}{}
	w.mu.Unlock()
}

func (w *wonSet) remove(userID int64) {
	w.mu.Lock()
	delete(w.m, userID)
	w.mu.Unlock()
}

// saleMemos is the memo of every goods this process has grabbed lately.
type saleMemos struct {
	m         sync.Map // goods ID → *saleMemo
	redisOps  atomic.Int64
	following atomic.Bool // FollowSales runs: only then may a refusal come from memory
	mute      atomic.Bool // tests: changes are not announced, as when the message is lost

	// polled, made only when a test waits for a poll, is closed as the
	// poll (pollSales) under way ends: a test waits on it for a poll that
	// read after a change.
	pollMu sync.Mutex
	polled chan struct{}
}

// pollEnded closes the channel a test waits on, if any.
func (ms *saleMemos) pollEnded() {
	ms.pollMu.Lock()
	if ms.polled != nil {
		close(ms.polled)
		ms.polled = nil
	}
	ms.pollMu.Unlock()
}

func (s *Sale) saleMemo(goodsID int64) *saleMemo {
	if v, ok := s.memos.m.Load(goodsID); ok {
		return v.(*saleMemo)
	}
	m := &saleMemo{readyCh: make(chan struct{})}
	m.used.Store(time.Now().UnixNano())
	v, loaded := s.memos.m.LoadOrStore(goodsID, m)
	if !loaded {
		go s.baseline(goodsID, m)
	}
	return v.(*saleMemo)
}

// baseline reads the goods' 'back' counters for a new memo, which learns
// nothing until then: a unit that comes back after the read changes them,
// and every answer learnt was asked after it.
func (s *Sale) baseline(goodsID int64, m *saleMemo) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	defer close(m.readyCh)
	base, err := s.readBacks(ctx, goodsID)
	if err != nil {
		s.memos.m.CompareAndDelete(goodsID, m) // the next grab tries again
		return
	}
	m.base = base
	m.ready.Store(true)
}

// readBacks reads the 'back' counter of each bucket of the goods.
func (s *Sale) readBacks(ctx context.Context, goodsID int64) ([]string, error) {
	pipe := s.Redis.Pipeline()
	cmds := s.queueBacks(ctx, pipe, goodsID)
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return nil, err
	}
	return backsOf(cmds), nil
}

func (s *Sale) queueBacks(ctx context.Context, pipe redis.Pipeliner, goodsID int64) []*redis.StringCmd {
	n := 1
	if e, ok := s.shards.m.Load(goodsID); ok {
		n = e.(shardsEntry).k
	}
	var cmds []*redis.StringCmd
	for _, b := range BucketsOf(goodsID, n) {
		cmds = append(cmds, pipe.HGet(ctx, InfoKey(b), "back"))
	}
	return cmds
}

func backsOf(cmds []*redis.StringCmd) []string {
	out := make([]string, len(cmds))
	for i, c := range cmds {
		out[i] = c.Val() // "" when not set
	}
	return out
}

// changed makes everything learnt about the goods stale.
func (ms *saleMemos) changed(goodsID int64) {
	if v, ok := ms.m.Load(goodsID); ok {
		v.(*saleMemo).epoch.Add(1)
	}
}

// learn keeps the grab script's answer code to userID, asked under epoch
// (read before the script ran). startMS is the sale's start for not_started.
func (m *saleMemo) learn(code string, userID, epoch, startMS int64) {
	mark := epoch + 1
	switch code {
	case "sold_out":
		m.soldOut.Store(mark)
		m.won.remove(userID)
	case "ended":
		m.ended.Store(mark)
	case "not_started":
		m.notStarted.Store(&startMemo{mark: mark, startMS: startMS})
	case "limit_reached":
		m.limit.Store(userID, mark)
	case "ok":
		m.won.add(userID)
	}
}

// RefusalsFromRedis is how many grabs this process refused after asking
// Redis (sold out, ended, not started, limit reached): the bench and tests
// tell refusals from memory by it.
func (s *Sale) RefusalsFromRedis() int64 { return s.memos.redisOps.Load() }

// SaleChanged tells every process (this one first) that the goods' sale
// changed: units came back or its window or terms moved. Best effort: the
// poll finds what a lost message would have said.
func (s *Sale) SaleChanged(ctx context.Context, goodsID int64) {
	s.memos.changed(goodsID)
	if s.memos.mute.Load() {
		return
	}
	if err := s.Redis.Publish(context.WithoutCancel(ctx), saleChannelOf(s.Redis), strconv.FormatInt(goodsID, 10)).Err(); err != nil {
		s.Log.Warn("announce a sale change", "goods", goodsID, "err", err)
	}
}

// FollowSales subscribes to SaleChannel and returns the loop that keeps
// this process's refusals from memory current while it runs: it follows
// the channel and polls the goods it remembers. Main starts it; its end
// releases the subscription.
func (s *Sale) FollowSales(ctx context.Context) (*lifecycle.Loop, error) {
	f, err := rdb.Follow(ctx, s.Redis, SaleChannel)
	if err != nil {
		return nil, fmt.Errorf("sale changes: %w", err)
	}
	f.Message = func(payload string) {
		if id, err := strconv.ParseInt(payload, 10, 64); err == nil {
			s.memos.changed(id)
		}
	}
	f.Gap = func() { // messages were lost meanwhile: every memo is stale
		s.memos.m.Range(func(_, v any) bool { v.(*saleMemo).epoch.Add(1); return true })
	}
	f.Every, f.Tick = SaleMemoPoll, s.pollSales
	return lifecycle.New("refusal memo", func(ctx context.Context) {
		defer f.Close()
		s.memos.following.Store(true)
		defer s.memos.following.Store(false)
		f.Run(ctx)
	}), nil
}

// pollSales reads the 'back' counter of every bucket of the goods met lately
// and makes stale what a changed one says; goods not met lately are forgotten.
func (s *Sale) pollSales(ctx context.Context) {
	defer s.memos.pollEnded()
	idle := time.Now().Add(-saleMemoIdle).UnixNano()
	type polled struct {
		m    *saleMemo
		cmds []*redis.StringCmd
	}
	var ps []polled
	pipe := s.Redis.Pipeline()
	s.memos.m.Range(func(k, v any) bool {
		id, m := k.(int64), v.(*saleMemo)
		if !m.ready.Load() {
			return true
		}
		if m.used.Load() < idle {
			s.memos.m.Delete(id)
			return true
		}
		ps = append(ps, polled{m: m, cmds: s.queueBacks(ctx, pipe, id)})
		return true
	})
	if len(ps) == 0 {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := pipe.Exec(pctx); err != nil && err != redis.Nil {
		if ctx.Err() == nil {
			s.Log.Warn("poll sale changes", "err", err)
		}
		return
	}
	for _, p := range ps {
		if now := backsOf(p.cmds); !sameStrings(now, p.m.base) {
			p.m.epoch.Add(1)
			p.m.base = now
		}
	}
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// refusalCodes are the grab script's answers a process may give from memory.
var refusalCodes = map[string]bool{"sold_out": true, "ended": true, "not_started": true, "limit_reached": true}

// learnOutcome learns a grab's outcome o into the goods' memo, asked
// under epoch (memoCheck, engine.go; nil: the goods had none then).
func (s *Sale) learnOutcome(ctx context.Context, memo *saleMemo, epoch int64, g Grab, o Outcome) {
	code := outcomeCode(o)
	if memo == nil && (code == "ok" || refusalCodes[code]) && s.memos.following.Load() {
		// The goods' first win or refusal here: later refusals may come
		// from memory. This one was asked before the memo: no epoch.
		memo, epoch = s.saleMemo(g.Goods), -1
	}
	if memo != nil {
		s.learnRefusal(ctx, memo, code, g.User, g.Goods, epoch)
	}
}

// outcomeCode is the script's word for a grab's outcome ("": none learnt).
func outcomeCode(o Outcome) string {
	switch {
	case o.Err == nil && o.Order != nil:
		return "ok"
	case o.Err == db.ErrSoldOut:
		return "sold_out"
	case o.Err == db.ErrEnded:
		return "ended"
	case o.Err == db.ErrNotStarted:
		return "not_started"
	case o.Err == db.ErrLimitReached:
		return "limit_reached"
	}
	return ""
}

// learnRefusal keeps the grab script's answer code to userID in memo, asked
// under epoch. A not_started answer reads the sale's start (one command, once
// an epoch) so that later grabs are refused from memory until then.
func (s *Sale) learnRefusal(ctx context.Context, memo *saleMemo, code string, userID, goodsID, epoch int64) {
	if code == "ok" {
		memo.learn(code, userID, epoch, 0)
		return
	}
	if !refusalCodes[code] {
		return
	}
	s.memos.redisOps.Add(1)
	if epoch < 0 { // asked before the memo could learn
		return
	}
	var startMS int64
	if code == "not_started" {
		v, err := s.Redis.HGet(ctx, InfoKey(Bucket0(goodsID)), "start").Int64()
		if err != nil {
			return
		}
		startMS = v
	}
	memo.learn(code, userID, epoch, startMS)
}
