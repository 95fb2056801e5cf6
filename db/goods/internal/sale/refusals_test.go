package sale_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/goods/goodstest"
	"github.com/seckill/seckill/db/goods/internal/sale"
)

// scriptCounter counts the grab decisions a client sends to Redis (the
// decision script, alone or in pipelines); other rooms' scripts, such as
// the orders flush a busy machine runs mid-test, are not grabs.
type scriptCounter struct{ n atomic.Int64 }

func (c *scriptCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *scriptCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.count(cmd)
		return next(ctx, cmd)
	}
}
func (c *scriptCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			c.count(cmd)
		}
		return next(ctx, cmds)
	}
}
func (c *scriptCounter) count(cmd redis.Cmder) {
	if strings.HasPrefix(strings.ToLower(cmd.Name()), "eval") && sale.IsDecision(cmd) {
		c.n.Add(1)
	}
}

// peer is another web process over the same Redis and store: its own
// memory, following sale changes until the test ends.
func peer(e *goodstest.Env) *goods.Service {
	e.T.Helper()
	b := *e.S.Backend
	p := goods.New(&b)
	p.OrderTTL = e.S.OrderTTL
	follow(e.T, p)
	return p
}

func follow(t testing.TB, s *goods.Service) {
	t.Helper()
	l, err := s.FollowSales(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	l.Start()
	t.Cleanup(l.Stop)
}

// learnt grabs the sold-out goods on s until s refuses it from memory (a
// new memo learns only once it has read where the sale stands). It first
// waits for a poll of the 'back' counters that started after the sale last
// changed (a win that stole a unit bumps its bucket's): a poll that found
// the change only later would make what the memo learnt here stale, and
// the refusals after it would ask Redis once more, as they should.
func learnt(t *testing.T, s *goods.Service, scripts *scriptCounter, goodsID int64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	// The poll under way may have read before the change; the one after it has not.
	for range 2 {
		select {
		case <-s.NextSalePoll():
		case <-time.After(time.Until(deadline)):
			t.Fatal("the refusal memo's poll never runs")
		}
	}
	for u := int64(1000); ; u++ {
		sent := scripts.n.Load()
		_, err := s.Grab(context.Background(), u, goodsID)
		goodstest.WantCode(t, "sold out", err, db.ESOLDOUT)
		if scripts.n.Load() == sent {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the sold-out goods is never refused from memory")
		}
		time.Sleep(time.Millisecond)
	}
}

// grabUntilWon grabs as user on s until it wins, refused sold out meanwhile;
// it fails the test if that takes longer than a generous bound.
func grabUntilWon(t *testing.T, s *goods.Service, user, goodsID int64, what string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := s.Grab(context.Background(), user, goodsID)
		if err == nil {
			return
		}
		goodstest.WantCode(t, what, err, db.ESOLDOUT)
		if time.Now().After(deadline) {
			t.Fatalf("%s: the unit that came back is still refused", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Refusals of a sold-out item come from memory, with no script sent to
// Redis; a unit given back reopens the sale on the process that took it
// back at once, on another process through its message, and, the message
// lost, through that process's poll.
func TestRefusalsFromMemory(t *testing.T) {
	goodstest.EachShards(t, func(t *testing.T, k int) {
		e := goodstest.NewK(t, k)
		follow(t, e.S)
		other := peer(e)
		scripts := new(scriptCounter)
		e.S.Redis.AddHook(scripts)
		g := e.LiveGoods(3, 1)
		orders := e.GrabMany(g.ID, 3)
		if scripts.n.Load() == 0 {
			t.Fatal("three wins counted no decision sent to Redis: the counter is blind")
		}
		for _, s := range []*goods.Service{e.S, other} {
			learnt(t, s, scripts, g.ID)
		}
		sent, fromRedis := scripts.n.Load(), e.S.RefusalsFromRedis()+other.RefusalsFromRedis()
		for u := int64(100); u < 300; u++ {
			for _, s := range []*goods.Service{e.S, other} {
				_, err := s.Grab(e.Ctx, u, g.ID)
				goodstest.WantCode(t, "sold out", err, db.ESOLDOUT)
			}
		}
		if n := scripts.n.Load() - sent; n != 0 {
			t.Fatalf("400 refusals of a sold-out item sent %d scripts to Redis, want 0", n)
		}
		if n := e.S.RefusalsFromRedis() + other.RefusalsFromRedis() - fromRedis; n != 0 {
			t.Fatalf("%d of 400 refusals came from Redis, want 0", n)
		}
		// A winner asks again: Redis says limit_reached, and then memory does.
		_, err := e.S.Grab(e.Ctx, orders[0].UserID, g.ID)
		goodstest.WantCode(t, "winner", err, db.ELIMITREACHED)

		// Cancelled here: sold again here at once.
		if _, err := e.S.CancelOrder(e.Ctx, orders[0].UserID, orders[0].ID); err != nil {
			t.Fatal(err)
		}
		if _, err := e.S.Grab(e.Ctx, 101, g.ID); err != nil {
			t.Fatalf("the unit cancelled on this process: %v", err)
		}
		// Cancelled here: the other process hears of it.
		if _, err := e.S.CancelOrder(e.Ctx, orders[1].UserID, orders[1].ID); err != nil {
			t.Fatal(err)
		}
		grabUntilWon(t, other, 102, g.ID, "the unit cancelled on the other process")
		// Cancelled with the message lost: the other process's poll finds it.
		learnt(t, other, scripts, g.ID) // sold out again
		e.S.MuteSaleChanges()
		if _, err := e.S.CancelOrder(e.Ctx, orders[2].UserID, orders[2].ID); err != nil {
			t.Fatal(err)
		}
		grabUntilWon(t, other, 103, g.ID, "the unit cancelled unannounced")
		e.CheckBalance(g.ID, "after the units came back")
		if st := e.Stats(g.ID); st.Remaining != 0 || st.Unpaid != 3 {
			t.Fatalf("remaining %d unpaid %d, want 0 and 3", st.Remaining, st.Unpaid)
		}
	})
}

// refusedFromMemory grabs and wants the refusal code with no script sent.
func refusedFromMemory(t *testing.T, s *goods.Service, scripts *scriptCounter, user, goodsID int64, code string) {
	t.Helper()
	sent := scripts.n.Load()
	_, err := s.Grab(context.Background(), user, goodsID)
	goodstest.WantCode(t, code+" from memory", err, code)
	if n := scripts.n.Load() - sent; n != 0 {
		t.Fatalf("%s: %d scripts sent, want the answer from memory", code, n)
	}
}

// A sale not started yet is refused from memory until its start by the
// clock, then sells; a shopper at the limit is refused from memory until
// an order of theirs is cancelled.
func TestRefusalsFromMemoryStartAndLimit(t *testing.T) {
	e := goodstest.New(t)
	follow(t, e.S)
	scripts := new(scriptCounter)
	e.S.Redis.AddHook(scripts)
	g := e.Goods(e.Slot(time.Minute, time.Hour), 5, 1)
	eventuallyRefused := func(user int64, code string) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			sent := scripts.n.Load()
			_, err := e.S.Grab(e.Ctx, user, g.ID)
			goodstest.WantCode(t, code, err, code)
			if scripts.n.Load() == sent {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s is never answered from memory", code)
			}
			time.Sleep(time.Millisecond)
		}
	}
	eventuallyRefused(1, db.ENOTSTARTED)
	refusedFromMemory(t, e.S, scripts, 2, g.ID, db.ENOTSTARTED)
	e.Clk.Advance(time.Minute)
	o := e.Grab(1, g.ID)
	eventuallyRefused(1, db.ELIMITREACHED)
	refusedFromMemory(t, e.S, scripts, 1, g.ID, db.ELIMITREACHED)
	if _, err := e.S.CancelOrder(e.Ctx, 1, o.ID); err != nil {
		t.Fatal(err)
	}
	e.Grab(1, g.ID) // back under the limit
}

// A keyed grab's retry is answered its first answer again, which may be
// stale: the memo learns nothing from it. (The model checker found this: a
// shopper's keyed retry replayed limit_reached after one of their orders
// was cancelled, and every later grab of theirs was refused from memory.)
func TestKeyedRetryTeachesTheMemoNothing(t *testing.T) {
	goodstest.EachShards(t, func(t *testing.T, k int) {
		e := goodstest.NewK(t, k)
		follow(t, e.S)
		g := e.LiveGoods(3, 1)
		o := e.Grab(1, g.ID)
		keyed := db.WithIdempotencyKey(e.Ctx, "retried")
		_, err := e.S.Grab(keyed, 1, g.ID)
		goodstest.WantCode(t, "at the limit, keyed", err, db.ELIMITREACHED)
		if _, err := e.S.CancelOrder(e.Ctx, 1, o.ID); err != nil {
			t.Fatal(err)
		}
		_, err = e.S.Grab(keyed, 1, g.ID)
		goodstest.WantCode(t, "the keyed retry, its first answer", err, db.ELIMITREACHED)
		if _, err := e.S.Grab(e.Ctx, 1, g.ID); err != nil {
			t.Fatalf("under the limit again after the cancel: %v", err)
		}
	})
}
