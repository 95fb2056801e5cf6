package fair_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/fair"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/model"
)

// powGoods creates first-come goods asking a proof of work of level bits,
// its sale starting in start.
func (e *goodsEnv) powGoods(bits int, start time.Duration) *model.Goods {
	e.T.Helper()
	sl := e.Slot(start, time.Hour)
	g, err := e.S.Create(e.Ctx, e.Merchant, goods.Input{SlotID: sl.ID, Title: "Proof", PriceCents: 10000,
		SeckillPriceCents: 4999, Stock: 100, LimitPerUser: 1, PowBits: new(bits)})
	if err != nil {
		e.T.Fatal(err)
	}
	return g
}

// process is another process over the same Redis and store: its own
// memory of the goods and of the attack counts, the server's key.
func (e *goodsEnv) process() *fair.Service {
	p := fairOver(e.S.Backend)
	p.PowKey = e.F.PowKey
	return p
}

// The level raised under attack is one for every process: refusals
// counted on one raise the challenges another gives, and a quiet window
// lowers them on both.
func TestPowLevelSharedAcrossProcesses(t *testing.T) {
	e := newGoodsEnv(t)
	// One second into a window, so each step of PowWindow + 1 s lands in
	// the next window, not (from late in one) in the one after it.
	e.Clk.Set(e.Clk.Now().Truncate(fair.PowWindow).Add(fair.PowWindow + time.Second))
	g := e.powGoods(6, -time.Minute)
	a, b := e.F, e.process()
	if l := b.PowLevel(e.Ctx, g.ID); l != 6 {
		t.Fatalf("before: level %d, want 6", l)
	}
	for u := int64(1); u <= 30; u++ { // bots without a proof, on a only
		wantCode(t, "no proof", a.Admit(e.Ctx, u, g.ID, ""), db.EPOWREQUIRED)
	}
	a.SyncPow(e.Ctx) // what a's loop does each second
	e.Clk.Advance(fair.PowWindow + time.Second)
	if l := b.PowLevel(e.Ctx, g.ID); l != 8 {
		t.Fatalf("under attack seen on a: b asks level %d, want 8", l)
	}
	c, err := b.PowChallenge(e.Ctx, 99, g.ID)
	if err != nil || c.Bits != 6 || c.Solutions != 4 {
		t.Fatalf("b's challenge under attack: %+v %v, want four solutions of 6 bits", c, err)
	}
	if l := a.PowLevel(e.Ctx, g.ID); l != 8 {
		t.Fatalf("a asks level %d, want 8", l)
	}
	e.Clk.Advance(fair.PowWindow + time.Second) // a quiet window
	if l := a.PowLevel(e.Ctx, g.ID); l != 6 {
		t.Fatalf("after a quiet window: a asks level %d, want 6", l)
	}
	if l := b.PowLevel(e.Ctx, g.ID); l != 6 {
		t.Fatalf("after a quiet window: b asks level %d, want 6", l)
	}
}

// An attack counted in a window is that window's, even when the loop that
// sends the counts read its clock just before the window began: the counts
// went to the window before, which closed with them, and the attack's own
// window closed quiet (cmd/seckill's TestFairPowRaisedUnderAttack met it
// in CI, where the test's clock steps a window at once).
func TestPowAttackSyncedLateKeepsItsWindow(t *testing.T) {
	e := newGoodsEnv(t)
	e.Clk.Set(e.Clk.Now().Truncate(fair.PowWindow).Add(fair.PowWindow + time.Second))
	g := e.powGoods(6, -time.Minute)
	a, b := e.F, e.process()
	if l := a.PowLevel(e.Ctx, g.ID); l != 6 {
		t.Fatalf("before: level %d, want 6", l)
	}
	read := e.Clk.Now() // the loop reads the clock, then the window turns
	e.Clk.Advance(fair.PowWindow)
	for u := int64(1); u <= 30; u++ {
		wantCode(t, "no proof", a.Admit(e.Ctx, u, g.ID, ""), db.EPOWREQUIRED)
	}
	a.SyncPowAt(e.Ctx, read)
	e.Clk.Advance(fair.PowWindow)
	if l := b.PowLevel(e.Ctx, g.ID); l != 8 {
		t.Fatalf("after an attack synced with the clock read before its window: level %d, want 8", l)
	}
}

// A challenge is the caller's own, good once, and for first-come goods
// given only from PowLead before the start.
func TestPowBoundAndFresh(t *testing.T) {
	e := newGoodsEnv(t)
	g := e.powGoods(8, time.Minute)
	_, err := e.F.PowChallenge(e.Ctx, 1, g.ID)
	wantCode(t, "a minute before the start", err, db.ENOTSTARTED)
	e.Clk.Advance(time.Minute - fair.PowLead)
	c, err := e.F.PowChallenge(e.Ctx, 1, g.ID)
	if err != nil {
		t.Fatalf("%s before the start: %v", fair.PowLead, err)
	}
	if ttl := c.ExpiresAt.Sub(e.Clk.Now()); ttl <= 0 || ttl > time.Minute {
		t.Fatalf("expires in %s, want at most a minute", ttl)
	}
	pow := fair.SolvePow(*c)
	wantCode(t, "another shopper's solution", e.F.Admit(e.Ctx, 2, g.ID, pow), db.EPOWINVALID)
	if err := e.F.Admit(e.Ctx, 1, g.ID, pow); err != nil {
		t.Fatalf("the shopper's own solution: %v", err)
	}
	wantCode(t, "spent", e.process().Admit(e.Ctx, 1, g.ID, pow), db.EPOWINVALID)
	late, _ := e.F.PowChallenge(e.Ctx, 1, g.ID)
	e.Clk.Advance(fair.PowTTL)
	wantCode(t, "expired", e.F.Admit(e.Ctx, 1, g.ID, fair.SolvePow(*late)), db.EPOWINVALID)
}

// sentTwice sends every SET of a spent proof twice, the first reply
// dropped: what go-redis does when a reply is lost to a timeout (a busy
// node, a cluster's 1 s read timeout) and it sends the command again.
type sentTwice struct{ n atomic.Int64 }

func (h *sentTwice) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *sentTwice) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *sentTwice) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if key, _ := cmd.Args()[min(1, len(cmd.Args())-1)].(string); cmd.Name() == "set" && strings.Contains(key, ":pow:") {
			h.n.Add(1)
			next(ctx, cmd) // its reply lost
		}
		return next(ctx, cmd)
	}
}

// A proof's spend that go-redis sends again after a lost reply finds its
// own spend, not another request's: the honest shopper is let in, keyed
// or not, and the proof stays spent for every other request.
func TestPowSpendSentAgainIsItsOwn(t *testing.T) {
	e := newGoodsEnv(t)
	g := e.powGoods(4, 0)
	h := new(sentTwice)
	e.S.Redis.AddHook(h)
	keyed := db.WithIdempotencyKey(e.Ctx, "spend-once")
	for _, ctx := range []context.Context{e.Ctx, keyed} {
		c, err := e.F.PowChallenge(ctx, 1, g.ID)
		if err != nil {
			t.Fatal(err)
		}
		pow := fair.SolvePow(*c)
		if err := e.F.Admit(ctx, 1, g.ID, pow); err != nil {
			t.Fatalf("the shopper's proof, its spend sent twice: %v", err)
		}
		wantCode(t, "the same proof in another request", e.F.Admit(e.Ctx, 1, g.ID, pow), db.EPOWINVALID)
		wantCode(t, "the same proof in another keyed request", e.F.Admit(db.WithIdempotencyKey(e.Ctx, "another"), 1, g.ID, pow), db.EPOWINVALID)
	}
	if h.n.Load() < 6 {
		t.Fatalf("%d spends went through the hook, want 6: the test does not reach the spend", h.n.Load())
	}
}
