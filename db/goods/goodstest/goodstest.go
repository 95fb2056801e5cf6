// Package goodstest builds the goods area (with fair sales plugged in) over
// a fresh Redis and durable store for the behaviour tests of its rooms
// (db/goods) and of fair sales (db/fair): a merchant, a settable clock, a
// Twin process, and the small steps every such test takes.
package goodstest

import (
	"context"
	"encoding/json"
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
	"github.com/seckill/seckill/db/goods/internal/sale"
	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/sqldb"
)

// Env is a goods service, with fair sales plugged in, over a fresh Redis and
// durable store, with a merchant and a settable clock.
type Env struct {
	T        testing.TB
	S        *goods.Service
	F        *fair.Service // fair sales, plugged into S
	Clk      *dbtest.Clock
	Merchant model.Claims
	Ctx      context.Context
	Shards   int // the Redis buckets of the goods it creates (at most its stock); 0: 1
}

// EachShards runs a goods test with goods of one Redis bucket and of three
// (db/goods/internal/sale/shards.go): the same behaviour either way.
func EachShards(t *testing.T, test func(t *testing.T, k int)) {
	for _, k := range []int{1, 3} {
		t.Run(fmt.Sprintf("K=%d", k), func(t *testing.T) { test(t, k) })
	}
}

// NewK is New whose goods have k buckets.
func NewK(t testing.TB, k int) *Env {
	e := New(t)
	e.Shards = k
	return e
}

// New builds the goods area with fair sales plugged in over the test's Redis
// and durable store (dbtest), a merchant, and a clock the test moves.
func New(t testing.TB) *Env {
	t.Helper()
	r, sq := dbtest.Redis(t), dbtest.DB(t)
	b := backend.New(sq, r.Client)
	b.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	clk := dbtest.NewClock(time.Now().UTC().Truncate(time.Millisecond))
	b.Now = clk.Now
	s, f := fair.Open(b)
	s.OrderTTL = 15 * time.Minute
	ctx := context.Background()
	return &Env{T: t, S: s, F: f, Clk: clk, Merchant: NewMerchant(t, sq), Ctx: ctx}
}

// NewMerchant adds the merchant account the slots and goods belong to
// (their rows refer to it) straight in SQL: goods needs nothing else of the
// accounts, and its tests stay apart from the accounts service.
func NewMerchant(t testing.TB, sq *sqldb.DB) model.Claims {
	t.Helper()
	var id int64
	err := sq.W.QueryRow(`INSERT INTO users (username, password_hash, role, created_ms) VALUES ('merchant1', '', ?, ?) RETURNING id`,
		model.RoleMerchant, time.Now().UnixMilli()).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return model.Claims{UserID: id, Username: "merchant1", Role: model.RoleMerchant}
}

// Twin is a second service over the same Redis and SQLite with its own
// clock, for racing operations that must see different times. Its fair
// sales (TwinFair) are a second process's too.
func (e *Env) Twin() (*goods.Service, *dbtest.Clock) {
	f, clk := e.TwinFair()
	return f.Goods, clk
}

// TwinFair is Twin's fair sales, plugged into the twin's goods.
func (e *Env) TwinFair() (*fair.Service, *dbtest.Clock) {
	b := *e.S.Backend
	b.Events = live.New(e.S.Redis)
	clk := dbtest.NewClock(e.Clk.Now())
	b.Now = clk.Now
	s2 := goods.New(&b, e.F.Fork(&b)) // a process of its own
	s2.OrderTTL = e.S.OrderTTL
	return s2.Fair.(*fair.Service), clk
}

// GrabWith is a shopper's grab through the sale's one entrance, bringing p.
func (e *Env) GrabWith(userID, goodsID int64, p goods.Pass) (*model.Order, error) {
	o := e.S.Decide(e.Ctx, []goods.Grab{{User: userID, Goods: goodsID, Pass: p}})[0]
	return o.Order, o.Err
}

// Slot creates a slot starting at start (relative to now) and lasting length.
func (e *Env) Slot(start, length time.Duration) *model.Slot {
	e.T.Helper()
	now := e.Clk.Now()
	sl, err := e.S.CreateSlot(e.Ctx, e.Merchant, goods.SlotInput{Title: "slot", StartAt: now.Add(start), EndAt: now.Add(start + length)})
	if err != nil {
		e.T.Fatal(err)
	}
	return sl
}

// Goods creates goods in the slot with the given stock and per-user limit.
func (e *Env) Goods(slot *model.Slot, stock, limit int64) *model.Goods {
	e.T.Helper()
	g, err := e.S.Create(e.Ctx, e.Merchant, goods.Input{SlotID: slot.ID, Title: "Phone", PriceCents: 10000,
		SeckillPriceCents: 4999, Stock: stock, LimitPerUser: limit, Shards: new(int(min(int64(max(e.Shards, 1)), stock)))})
	if err != nil {
		e.T.Fatal(err)
	}
	return g
}

// LiveGoods creates goods on sale now.
func (e *Env) LiveGoods(stock, limit int64) *model.Goods {
	e.T.Helper()
	return e.Goods(e.Slot(-time.Minute, time.Hour), stock, limit)
}

func (e *Env) Grab(user, goods int64) *model.Order {
	e.T.Helper()
	o, err := e.S.Grab(e.Ctx, user, goods)
	if err != nil {
		e.T.Fatalf("user %d grab goods %d: %v", user, goods, err)
	}
	return o
}

// GrabMany grabs n orders of the goods, one per user from 1.
func (e *Env) GrabMany(goodsID int64, n int) []*model.Order {
	e.T.Helper()
	out := make([]*model.Order, n)
	for i := range out {
		out[i] = e.Grab(int64(i+1), goodsID)
	}
	return out
}

func (e *Env) Stats(goods int64) *model.GoodsStats {
	e.T.Helper()
	st, err := e.S.Stats(e.Ctx, e.Merchant, goods)
	if err != nil {
		e.T.Fatal(err)
	}
	return st
}

func (e *Env) Remaining(goods int64) int64 {
	e.T.Helper()
	g, err := e.S.Get(e.Ctx, goods)
	if err != nil {
		e.T.Fatal(err)
	}
	return g.Remaining
}

// Flush runs the orders' flush under the flush lock, as the worker does.
func (e *Env) Flush() {
	e.T.Helper()
	if err := e.S.FlushAll(e.Ctx, e.S.FlushOrders); err != nil {
		e.T.Fatalf("flush: %v", err)
	}
}

// CheckBalance asserts Redis's invariant remaining + unpaid + paid == stock.
func (e *Env) CheckBalance(goods int64, when string) {
	e.T.Helper()
	st := e.Stats(goods)
	if st.Remaining+st.Unpaid+st.Paid != st.Stock {
		e.T.Fatalf("%s: remaining %d + unpaid %d + paid %d != stock %d", when, st.Remaining, st.Unpaid, st.Paid, st.Stock)
	}
}

func WantCode(t testing.TB, what string, err error, code string) {
	t.Helper()
	if db.ErrorCode(err) != code {
		t.Fatalf("%s: got %v (code %q), want %q", what, err, db.ErrorCode(err), code)
	}
}

// UserEvents collects the order events published to one user's topic.
type UserEvents struct {
	ch <-chan string
}

// WatchUser subscribes to the user's topic now, before anything the test
// does is published.
func (e *Env) WatchUser(userID int64) *UserEvents {
	e.T.Helper()
	sub, err := live.Subscribe(e.Ctx, e.S.Redis, live.TopicUser(userID)) // subscribed before anything is published
	if err != nil {
		e.T.Fatal(err)
	}
	e.T.Cleanup(func() { sub.Close() })
	topic := live.TopicUser(userID)
	ch := make(chan string, 64)
	go func() {
		for m := range sub.Channel() {
			if msg, err := live.Decode(m.Payload); err == nil && msg.Topic == topic {
				ch <- string(msg.Event)
			}
		}
	}()
	return &UserEvents{ch: ch}
}

// WaitOrder returns the first order event about orderID that match accepts.
// The deadline is only a bound on a broken run: the event is published as
// the flush voids the order, before this is called.
func (u *UserEvents) WaitOrder(t *testing.T, orderID int64, match func(*model.Order) bool) *model.Order {
	t.Helper()
	deadline := time.After(10 * time.Second)
	var seen []string
	for {
		select {
		case ev := <-u.ch:
			var oe sale.OrderEvent
			if err := json.Unmarshal([]byte(ev), &oe); err == nil && oe.Type == "order" && oe.Order != nil && oe.Order.ID == orderID && match(oe.Order) {
				return oe.Order
			}
			seen = append(seen, ev)
		case <-deadline:
			t.Fatalf("the user was never told about order %d; events seen: %v", orderID, seen)
		}
	}
}

// Later is the later of two times.
func Later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// OrderRecordFields reads an order record with the Go codec (sale.OrderFields):
// each field's value as text, by name, and the record as Go writes it again.
func OrderRecordFields(rec string) (map[string]string, string, error) {
	r, err := sale.OrderFields.Decode(rec)
	if err != nil {
		return nil, "", err
	}
	out := map[string]string{}
	values := sale.OrderFields.Values(&r)
	for i, name := range sale.OrderFields.Names() {
		out[name] = values[i]
	}
	return out, sale.OrderFields.Encode(&r), nil
}
