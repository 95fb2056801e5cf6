package goods_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/fair"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/sqldb"
)

// goodsEnv is a goods service over a fresh Redis and SQLite, with a merchant and a settable clock.
type goodsEnv struct {
	t        testing.TB
	s        *goods.Service
	f        *fair.Service // fair sales, plugged into s
	clk      *dbtest.Clock
	merchant model.Claims
	ctx      context.Context
	shards   int // the Redis buckets of the goods it creates (at most its stock); 0: 1
}

// eachShards runs a goods test with goods of one Redis bucket and of three
// (db/goods/shards.go): the same behaviour either way.
func eachShards(t *testing.T, test func(t *testing.T, k int)) {
	for _, k := range []int{1, 3} {
		t.Run(fmt.Sprintf("K=%d", k), func(t *testing.T) { test(t, k) })
	}
}

// newGoodsEnvK is newGoodsEnv whose goods have k buckets.
func newGoodsEnvK(t testing.TB, k int) *goodsEnv {
	e := newGoodsEnv(t)
	e.shards = k
	return e
}

func newGoodsEnv(t testing.TB) *goodsEnv {
	t.Helper()
	r, sq := dbtest.Redis(t), dbtest.DB(t)
	b := backend.New(sq, r.Client)
	b.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	clk := dbtest.NewClock(time.Now().UTC().Truncate(time.Millisecond))
	b.Now = clk.Now
	s := goods.New(b)
	s.OrderTTL = 15 * time.Minute
	ctx := context.Background()
	return &goodsEnv{t: t, s: s, f: fair.New(s), clk: clk, merchant: newMerchant(t, sq), ctx: ctx}
}

// newMerchant adds the merchant account the slots and goods belong to
// (their rows refer to it) straight in SQL: goods needs nothing else of the
// accounts, and its tests stay apart from the accounts service.
func newMerchant(t testing.TB, sq *sqldb.DB) model.Claims {
	t.Helper()
	var id int64
	err := sq.W.QueryRow(`INSERT INTO users (username, password_hash, role, created_ms) VALUES ('merchant1', '', ?, ?) RETURNING id`,
		model.RoleMerchant, time.Now().UnixMilli()).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return model.Claims{UserID: id, Username: "merchant1", Role: model.RoleMerchant}
}

// twin is a second service over the same Redis and SQLite with its own
// clock, for racing operations that must see different times. Its fair
// sales (twinFair) are a second process's too.
func (e *goodsEnv) twin() (*goods.Service, *dbtest.Clock) {
	f, clk := e.twinFair()
	return f.Goods, clk
}

// twinFair is twin's fair sales, plugged into the twin's goods.
func (e *goodsEnv) twinFair() (*fair.Service, *dbtest.Clock) {
	b := *e.s.Backend
	b.Events = live.New(e.s.Redis)
	clk := dbtest.NewClock(e.clk.Now())
	b.Now = clk.Now
	sale := *e.s.Sale
	sale.Backend = &b
	ledger := *e.s.Ledger
	ledger.Sale = &sale
	s2 := *e.s
	s2.Ledger = &ledger
	f2 := *e.f
	f2.Backend, f2.Goods = &b, &s2
	s2.Gate, s2.Fair = &f2, &f2
	return &f2, clk
}

// slot creates a slot starting at start (relative to now) and lasting length.
func (e *goodsEnv) slot(start, length time.Duration) *model.Slot {
	e.t.Helper()
	now := e.clk.Now()
	sl, err := e.s.CreateSlot(e.ctx, e.merchant, goods.SlotInput{Title: "slot", StartAt: now.Add(start), EndAt: now.Add(start + length)})
	if err != nil {
		e.t.Fatal(err)
	}
	return sl
}

// goods creates goods in the slot with the given stock and per-user limit.
func (e *goodsEnv) goods(slot *model.Slot, stock, limit int64) *model.Goods {
	e.t.Helper()
	g, err := e.s.Create(e.ctx, e.merchant, goods.Input{SlotID: slot.ID, Title: "Phone", PriceCents: 10000,
		SeckillPriceCents: 4999, Stock: stock, LimitPerUser: limit, Shards: new(int(min(int64(max(e.shards, 1)), stock)))})
	if err != nil {
		e.t.Fatal(err)
	}
	return g
}

// liveGoods creates goods on sale now.
func (e *goodsEnv) liveGoods(stock, limit int64) *model.Goods {
	e.t.Helper()
	return e.goods(e.slot(-time.Minute, time.Hour), stock, limit)
}

func (e *goodsEnv) grab(user, goods int64) *model.Order {
	e.t.Helper()
	o, err := e.s.Grab(e.ctx, user, goods)
	if err != nil {
		e.t.Fatalf("user %d grab goods %d: %v", user, goods, err)
	}
	return o
}

func (e *goodsEnv) stats(goods int64) *model.GoodsStats {
	e.t.Helper()
	st, err := e.s.Stats(e.ctx, e.merchant, goods)
	if err != nil {
		e.t.Fatal(err)
	}
	return st
}

func (e *goodsEnv) remaining(goods int64) int64 {
	e.t.Helper()
	g, err := e.s.Get(e.ctx, goods)
	if err != nil {
		e.t.Fatal(err)
	}
	return g.Remaining
}

// flush runs the orders' flush under the flush lock, as the worker does.
func (e *goodsEnv) flush() {
	e.t.Helper()
	if err := e.s.FlushAll(e.ctx, e.s.FlushOrders); err != nil {
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
