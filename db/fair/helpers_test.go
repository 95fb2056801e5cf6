package fair_test

import (
	"context"
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

// goodsEnv is a goods service with fair sales plugged in over a fresh Redis
// and SQLite, with a merchant and a settable clock (as db/goods' tests make it).
type goodsEnv struct {
	t        testing.TB
	s        *goods.Service
	f        *fair.Service // fair sales, plugged into s
	clk      *dbtest.Clock
	merchant model.Claims
	ctx      context.Context
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
		SeckillPriceCents: 4999, Stock: stock, LimitPerUser: limit})
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

func wantCode(t testing.TB, what string, err error, code string) {
	t.Helper()
	if db.ErrorCode(err) != code {
		t.Fatalf("%s: got %v (code %q), want %q", what, err, db.ErrorCode(err), code)
	}
}
