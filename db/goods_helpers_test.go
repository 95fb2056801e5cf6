package db_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/account"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/db/model"
	"golang.org/x/crypto/bcrypt"
)

// clock is a settable time source shared by a test's stores.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Set(t time.Time)         { c.mu.Lock(); c.now = t; c.mu.Unlock() }
func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// goodsEnv is a store over a fresh Redis and SQLite, with a merchant and a settable clock.
type goodsEnv struct {
	t        testing.TB
	s        *db.Store
	clk      *clock
	merchant model.Claims
	ctx      context.Context
}

func newGoodsEnv(t testing.TB) *goodsEnv {
	t.Helper()
	r, sq := dbtest.Redis(t), dbtest.SQLite(t)
	s := db.NewStore(sq, r.Client)
	s.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	s.OrderTTL = 15 * time.Minute
	clk := &clock{now: time.Now().UTC().Truncate(time.Millisecond)}
	s.Now = clk.Now
	ctx := context.Background()
	accounts := account.New(s.Backend)
	accounts.BcryptCost = bcrypt.MinCost
	u, err := accounts.CreateUser(ctx, "merchant1", "password123", model.RoleMerchant)
	if err != nil {
		t.Fatal(err)
	}
	return &goodsEnv{t: t, s: s, clk: clk, merchant: model.Claims{UserID: u.ID, Username: u.Username, Role: u.Role}, ctx: ctx}
}

// twin is a second store over the same Redis and SQLite with its own clock,
// for racing operations that must see different times.
func (e *goodsEnv) twin() (*db.Store, *clock) {
	s2 := *e.s
	s2.Events = live.New(e.s.Redis)
	clk := &clock{now: e.clk.Now()}
	s2.Now = clk.Now
	return &s2, clk
}

// slot creates a slot starting at start (relative to now) and lasting length.
func (e *goodsEnv) slot(start, length time.Duration) *db.Slot {
	e.t.Helper()
	now := e.clk.Now()
	sl, err := e.s.CreateSlot(e.ctx, e.merchant, db.SlotInput{Title: "slot", StartAt: now.Add(start), EndAt: now.Add(start + length)})
	if err != nil {
		e.t.Fatal(err)
	}
	return sl
}

// goods creates goods in the slot with the given stock and per-user limit.
func (e *goodsEnv) goods(slot *db.Slot, stock, limit int64) *db.Goods {
	e.t.Helper()
	g, err := e.s.CreateGoods(e.ctx, e.merchant, db.GoodsInput{SlotID: slot.ID, Title: "Phone", PriceCents: 10000,
		SeckillPriceCents: 4999, Stock: stock, LimitPerUser: limit})
	if err != nil {
		e.t.Fatal(err)
	}
	return g
}

// liveGoods creates goods on sale now.
func (e *goodsEnv) liveGoods(stock, limit int64) *db.Goods {
	e.t.Helper()
	return e.goods(e.slot(-time.Minute, time.Hour), stock, limit)
}

func (e *goodsEnv) grab(user, goods int64) *db.Order {
	e.t.Helper()
	o, err := e.s.GrabGoods(e.ctx, user, goods)
	if err != nil {
		e.t.Fatalf("user %d grab goods %d: %v", user, goods, err)
	}
	return o
}

func (e *goodsEnv) stats(goods int64) *db.GoodsStats {
	e.t.Helper()
	st, err := e.s.GoodsStats(e.ctx, e.merchant, goods)
	if err != nil {
		e.t.Fatal(err)
	}
	return st
}

func (e *goodsEnv) remaining(goods int64) int64 {
	e.t.Helper()
	g, err := e.s.Goods(e.ctx, goods)
	if err != nil {
		e.t.Fatal(err)
	}
	return g.Remaining
}

func (e *goodsEnv) flush() {
	e.t.Helper()
	if err := e.s.FlushAll(e.ctx); err != nil {
		e.t.Fatalf("flush: %v", err)
	}
}

// checkBalance asserts Redis's invariant remaining + unpaid + paid == stock.
func (e *goodsEnv) checkBalance(goods int64, when string) {
	e.t.Helper()
	st := e.stats(goods)
	if st.Remaining+st.Unpaid+st.Paid != st.Stock {
		e.t.Fatalf("%s: remaining %d + unpaid %d + paid %d != stock %d", when, st.Remaining, st.Unpaid, st.Paid, st.Stock)
	}
}

func wantCode(t testing.TB, what string, err error, code string) {
	t.Helper()
	if db.ErrorCode(err) != code {
		t.Fatalf("%s: got %v (code %q), want %q", what, err, db.ErrorCode(err), code)
	}
}
