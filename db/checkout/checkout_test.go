package checkout_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/checkout"
	"github.com/seckill/seckill/db/coupon"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/rdb"
)

// env is a checkout over goods and coupons on this test's Redis and store,
// with a settable clock, a merchant and a few shoppers.
type env struct {
	t        testing.TB
	ctx      context.Context
	clk      *dbtest.Clock
	r        *rdb.Redis
	b        *backend.Backend
	g        *goods.Service
	c        *coupon.Service
	s        *checkout.Service
	merchant model.Claims
	users    []int64
	shards   int // Redis buckets of the goods it creates (at most the stock); 0: 1
}

// eachShards runs a checkout test over goods of one Redis bucket and of
// three: the users' orders then lie in buckets other than 0 too.
func eachShards(t *testing.T, test func(t *testing.T, k int)) {
	for _, k := range []int{1, 3} {
		t.Run(fmt.Sprintf("K=%d", k), func(t *testing.T) { test(t, k) })
	}
}

// newEnvK is newEnv whose goods have k buckets.
func newEnvK(t testing.TB, k int) *env {
	e := newEnv(t)
	e.shards = k
	return e
}

func newEnv(t testing.TB) *env {
	t.Helper()
	r, sq := dbtest.Redis(t), dbtest.DB(t)
	dbtest.GuardSlots(t, r.Client) // every script and command stays in one Redis Cluster slot
	b := backend.New(sq, r.Client)
	b.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	b.Tasks = asynq.NewClientFromRedisClient(r.Client)
	b.Queue = asynq.NewInspectorFromRedisClient(r.Client)
	clk := dbtest.NewClock(time.Now().UTC().Truncate(time.Second))
	b.Now = clk.Now
	g := goods.New(b)
	g.OrderTTL = 15 * time.Minute
	c := &coupon.Service{Backend: b}
	e := &env{t: t, ctx: context.Background(), clk: clk, r: r, b: b, g: g, c: c,
		s: &checkout.Service{Backend: b, Goods: g, Coupons: c, PaymentSecret: []byte("test payment secret")}}
	var ids []int64
	for i, role := range []string{model.RoleMerchant, model.RoleUser, model.RoleUser, model.RoleUser} {
		var id int64
		if err := sq.W.QueryRow(`INSERT INTO users (username, password_hash, role, created_ms) VALUES (?, '', ?, ?) RETURNING id`,
			fmt.Sprintf("u%d", i), role, clk.Now().UnixMilli()).Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	e.merchant = model.Claims{UserID: ids[0], Username: "u0", Role: model.RoleMerchant}
	e.users = ids[1:]
	return e
}

// liveGoods puts goods on sale now at price cents.
func (e *env) liveGoods(stock, limit, price int64) *model.Goods {
	e.t.Helper()
	now := e.clk.Now()
	sl, err := e.g.CreateSlot(e.ctx, e.merchant, goods.SlotInput{Title: "slot", StartAt: now.Add(-time.Minute), EndAt: now.Add(time.Hour)})
	if err != nil {
		e.t.Fatal(err)
	}
	g, err := e.g.Create(e.ctx, e.merchant, goods.Input{SlotID: sl.ID, Title: "Phone", PriceCents: price + 1000,
		SeckillPriceCents: price, Stock: stock, LimitPerUser: limit, Shards: new(int(min(int64(max(e.shards, 1)), stock)))})
	if err != nil {
		e.t.Fatal(err)
	}
	return g
}

// template puts a coupon template up for grabs now.
func (e *env) template(kind string, value, minSpend int64, validDays int) *model.Coupon {
	e.t.Helper()
	now := e.clk.Now()
	c, err := e.c.Create(e.ctx, e.merchant.UserID, model.CouponInput{Title: "Deal", Kind: kind, Value: value, MinSpendCents: minSpend,
		Stock: 100, LimitPerUser: 5, GrabStartAt: now.Add(-time.Second), GrabEndAt: now.Add(time.Hour), ValidDays: validDays})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *env) grabCoupon(user, couponID int64) int64 {
	e.t.Helper()
	uc, err := e.c.Grab(e.ctx, user, couponID, "")
	if err != nil {
		e.t.Fatal(err)
	}
	return uc.ID
}

func (e *env) grab(user, goodsID int64) *model.Order {
	e.t.Helper()
	o, err := e.g.Grab(e.ctx, user, goodsID)
	if err != nil {
		e.t.Fatal(err)
	}
	return o
}

// flush moves orders and coupons to the store, as the worker does.
func (e *env) flush() {
	e.t.Helper()
	if err := e.b.FlushAll(e.ctx, e.g.FlushOrders, e.c.FlushGrabs); err != nil {
		e.t.Fatal(err)
	}
}

// couponRow is a user coupon as the store holds it.
func (e *env) couponRow(id int64) (status string, orderID int64) {
	e.t.Helper()
	if err := e.b.SQL.R.QueryRow(`SELECT status, order_id FROM user_coupons WHERE id = ?`, id).Scan(&status, &orderID); err != nil {
		e.t.Fatal(err)
	}
	return
}

// orderRow is an order as the store holds it.
func (e *env) orderRow(id int64) (status string, discount, paid, couponID, paidAt int64) {
	e.t.Helper()
	if err := e.b.SQL.R.QueryRow(`SELECT status, discount_cents, paid_cents, user_coupon_id, paid_at_ms FROM orders WHERE id = ?`, id).
		Scan(&status, &discount, &paid, &couponID, &paidAt); err != nil {
		e.t.Fatal(err)
	}
	return
}

func wantCode(t testing.TB, what string, err error, code string) {
	t.Helper()
	if db.ErrorCode(err) != code {
		t.Fatalf("%s: got %v (code %q), want %q", what, err, db.ErrorCode(err), code)
	}
}

func TestCouponDiscount(t *testing.T) {
	for _, c := range []struct {
		kind          string
		value, amount int64
		want          int64
	}{
		{model.CouponAmountOff, 1000, 4999, 1000},
		{model.CouponAmountOff, 6000, 4999, 4999}, // at most the amount
		{model.CouponPercentOff, 15, 4999, 749},   // 749.85 rounded down
		{model.CouponPercentOff, 99, 1, 0},
		{model.CouponPercentOff, 50, 3, 1},
		{"bogus", 10, 100, 0},
	} {
		if got := model.CouponDiscount(c.kind, c.value, c.amount); got != c.want {
			t.Errorf("%s %d of %d = %d, want %d", c.kind, c.value, c.amount, got, c.want)
		}
	}
}

// Paying with a coupon discounts the order and uses the coupon, both in Redis
// and, after the flush, in the store; paying again changes nothing; the coupon
// cannot pay a second order.
func TestPayWithCoupon(t *testing.T) { eachShards(t, testPayWithCoupon) }

func testPayWithCoupon(t *testing.T, k int) {
	e := newEnvK(t, k)
	u := e.users[0]
	g := e.liveGoods(10, 2, 4999)
	tpl := e.template(model.CouponAmountOff, 1000, 2000, 7)
	uc := e.grabCoupon(u, tpl.ID)
	o := e.grab(u, g.ID)
	// Not flushed yet: the checkout flushes the coupon before claiming it.
	paid, err := e.s.Pay(e.ctx, u, o.ID, uc)
	if err != nil {
		t.Fatal(err)
	}
	if paid.Status != model.OrderPaid || paid.DiscountCents != 1000 || paid.PaidCents != 3999 || paid.UserCouponID != uc || paid.PaidAt == nil {
		t.Fatalf("paid order %+v", paid)
	}
	if st, oid := e.couponRow(uc); st != model.CouponUsed || oid != o.ID {
		t.Fatalf("coupon %s for order %d, want used for %d", st, oid, o.ID)
	}
	again, err := e.s.Pay(e.ctx, u, o.ID, uc)
	if err != nil || again.Version != paid.Version || again.PaidCents != 3999 {
		t.Fatalf("pay again = %+v, %v; want unchanged", again, err)
	}
	o2 := e.grab(u, g.ID)
	_, err = e.s.Pay(e.ctx, u, o2.ID, uc)
	wantCode(t, "the used coupon on a second order", err, db.ECONFLICT)
	if got, _ := e.g.Order(e.ctx, u, o2.ID); got.Status != model.OrderUnpaid {
		t.Fatalf("second order %s after a refused coupon, want unpaid", got.Status)
	}
	e.flush()
	st, discount, paidCents, couponID, paidAt := e.orderRow(o.ID)
	if st != model.OrderPaid || discount != 1000 || paidCents != 3999 || couponID != uc || paidAt != e.clk.Now().UnixMilli() {
		t.Fatalf("stored order: %s discount %d paid %d coupon %d at %d", st, discount, paidCents, couponID, paidAt)
	}
	// My coupons shows it used, with its order.
	list, err := e.c.UserCoupons(e.ctx, u)
	if err != nil || len(list) != 1 || list[0].Status != model.CouponUsed || list[0].OrderID != o.ID {
		t.Fatalf("user coupons %+v, %v", list, err)
	}
	// Without a coupon, paid is the amount.
	p2, err := e.s.Pay(e.ctx, u, o2.ID, 0)
	if err != nil || p2.PaidCents != p2.AmountCents || p2.DiscountCents != 0 {
		t.Fatalf("plain pay = %+v, %v", p2, err)
	}
}

// A coupon is refused, changing nothing, when it is below its minimum,
// someone else's, expired or unknown; percent_off rounds down.
func TestPayCouponRules(t *testing.T) { eachShards(t, testPayCouponRules) }

func testPayCouponRules(t *testing.T, k int) {
	e := newEnvK(t, k)
	u, other := e.users[0], e.users[1]
	g := e.liveGoods(10, 5, 4999)
	big := e.template(model.CouponAmountOff, 1000, 5000, 7)
	pct := e.template(model.CouponPercentOff, 15, 0, 7)
	short := e.template(model.CouponAmountOff, 100, 0, 1)
	ucBig, ucPct, ucOther, ucShort := e.grabCoupon(u, big.ID), e.grabCoupon(u, pct.ID), e.grabCoupon(other, pct.ID), e.grabCoupon(u, short.ID)
	e.flush()
	o := e.grab(u, g.ID)
	_, err := e.s.Pay(e.ctx, u, o.ID, ucBig)
	wantCode(t, "below the minimum", err, db.EINVALID)
	_, err = e.s.Pay(e.ctx, u, o.ID, ucOther)
	wantCode(t, "another user's coupon", err, db.ENOTFOUND)
	_, err = e.s.Pay(e.ctx, u, o.ID, coupon.UserCouponID(pct.ID, 99))
	wantCode(t, "an unknown coupon", err, db.ENOTFOUND)
	if got, _ := e.g.Order(e.ctx, u, o.ID); got.Status != model.OrderUnpaid {
		t.Fatalf("order %s after refusals, want unpaid", got.Status)
	}
	for _, id := range []int64{ucBig, ucOther} {
		if st, _ := e.couponRow(id); st != model.CouponUnused {
			t.Fatalf("coupon %d is %s after a refusal", id, st)
		}
	}
	p, err := e.s.Pay(e.ctx, u, o.ID, ucPct)
	if err != nil || p.DiscountCents != 749 || p.PaidCents != 4250 {
		t.Fatalf("15%% off 4999 = %+v, %v; want 749 off", p, err)
	}
	// A day later the one-day coupon has expired: refused, and the list says so.
	e.clk.Advance(24*time.Hour + time.Second)
	g2 := e.liveGoods(10, 5, 4999)
	o2 := e.grab(u, g2.ID)
	_, err = e.s.Pay(e.ctx, u, o2.ID, ucShort)
	wantCode(t, "an expired coupon", err, db.EEXPIRED)
	list, _ := e.c.UserCoupons(e.ctx, u)
	for _, c := range list {
		if c.ID == ucShort && c.Status != model.CouponExpired {
			t.Fatalf("expired coupon listed %s", c.Status)
		}
	}
	// The periodic task marks it in the store.
	if n, err := e.s.ExpireCoupons(e.ctx); err != nil || n != 1 {
		t.Fatalf("expire coupons = %d, %v; want 1", n, err)
	}
	if st, _ := e.couponRow(ucShort); st != model.CouponExpired {
		t.Fatalf("stored %s, want expired", st)
	}
}

// Hundreds of pays of several orders with the same coupon, released at once:
// exactly one order takes the coupon, and after the flush the order and the
// coupon name each other; every other order is still unpaid.
func TestPayCouponRace(t *testing.T) { eachShards(t, testPayCouponRace) }

func testPayCouponRace(t *testing.T, k int) {
	e := newEnvK(t, k)
	u := e.users[0]
	tpl := e.template(model.CouponAmountOff, 500, 0, 7)
	uc := e.grabCoupon(u, tpl.ID)
	const orders, per = 6, 50
	var os []*model.Order
	for range orders {
		os = append(os, e.grab(u, e.liveGoods(5, 1, 4999).ID))
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := map[int64]int{}
	codes := map[string]int{}
	for i := range orders * per {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			o, err := e.s.Pay(e.ctx, u, os[i%orders].ID, uc)
			// What the API answers 503 (the coupon's lane held past its
			// wait, a Redis read timed out: a busy machine) is asked
			// again, as a shopper's client does.
			for try := 0; backend.Unavailable(err) && try < 20; try++ {
				o, err = e.s.Pay(e.ctx, u, os[i%orders].ID, uc)
			}
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				won[o.ID]++
			} else {
				if codes[db.ErrorCode(err)] == 0 && db.ErrorCode(err) != db.ECONFLICT {
					t.Logf("pay: %v", err)
				}
				codes[db.ErrorCode(err)]++
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(won) != 1 || codes[db.ECONFLICT] == 0 || len(codes) != 1 {
		t.Fatalf("orders paid %v, refusals %v; want exactly one order, the rest conflict", won, codes)
	}
	e.flush()
	st, oid := e.couponRow(uc)
	if st != model.CouponUsed || won[oid] == 0 {
		t.Fatalf("coupon %s for order %d, paid %v", st, oid, won)
	}
	for _, o := range os {
		status, discount, _, couponID, _ := e.orderRow(o.ID)
		if o.ID == oid {
			if status != model.OrderPaid || couponID != uc || discount != 500 {
				t.Fatalf("winner %d: %s coupon %d discount %d", o.ID, status, couponID, discount)
			}
		} else if status != model.OrderUnpaid || couponID != 0 {
			t.Fatalf("loser %d: %s coupon %d", o.ID, status, couponID)
		}
	}
	if n, err := e.s.SweepCoupons(e.ctx); err != nil || n != 0 {
		t.Fatalf("sweep after a clean race released %d, %v", n, err)
	}
}

// A refund puts the unit back on sale while the slot is live and the
// coupon back to unused; only a paid order can be refunded.
func TestRefund(t *testing.T) { eachShards(t, testRefund) }

func testRefund(t *testing.T, k int) {
	e := newEnvK(t, k)
	u := e.users[0]
	g := e.liveGoods(1, 1, 4999)
	tpl := e.template(model.CouponAmountOff, 1000, 0, 7)
	uc := e.grabCoupon(u, tpl.ID)
	o := e.grab(u, g.ID)
	_, err := e.s.Refund(e.ctx, u, o.ID)
	wantCode(t, "refund an unpaid order", err, db.ECONFLICT)
	if _, err := e.s.Pay(e.ctx, u, o.ID, uc); err != nil {
		t.Fatal(err)
	}
	_, err = e.s.Refund(e.ctx, e.users[1], o.ID)
	wantCode(t, "refund another user's order", err, db.ENOTFOUND)
	r, err := e.s.Refund(e.ctx, u, o.ID)
	if err != nil || r.Status != model.OrderRefunded || r.RefundedAt == nil || r.PaidCents != 3999 {
		t.Fatalf("refund = %+v, %v", r, err)
	}
	if st, oid := e.couponRow(uc); st != model.CouponUnused || oid != 0 {
		t.Fatalf("coupon %s (order %d) after the refund, want unused", st, oid)
	}
	st, err := e.g.Stats(e.ctx, e.merchant, g.ID)
	if err != nil || st.Remaining != 1 || st.Paid != 0 || st.RevenueCents != 0 {
		t.Fatalf("stats after refund %+v, %v; want the unit back and no revenue", st, err)
	}
	again, err := e.s.Refund(e.ctx, u, o.ID)
	if err != nil || again.Version != r.Version {
		t.Fatalf("refund again = %+v, %v; want unchanged", again, err)
	}
	// The user's limit mark is freed: the unit can be grabbed again.
	o2 := e.grab(u, g.ID)
	e.flush()
	if s, _, _, _, _ := e.orderRow(o.ID); s != model.OrderRefunded {
		t.Fatalf("stored %s, want refunded", s)
	}
	// After the slot ends a refunded unit does not go back on sale.
	if _, err := e.s.Pay(e.ctx, u, o2.ID, 0); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(2 * time.Hour)
	if _, err := e.s.Refund(e.ctx, u, o2.ID); err != nil {
		t.Fatal(err)
	}
	if st, _ := e.g.Stats(e.ctx, e.merchant, g.ID); st.Remaining != 0 {
		t.Fatalf("remaining %d after a refund past the end, want 0", st.Remaining)
	}
}

// Orders of goods no longer in Redis are refunded in the store.
func TestRefundSettled(t *testing.T) { eachShards(t, testRefundSettled) }

func testRefundSettled(t *testing.T, k int) {
	e := newEnvK(t, k)
	u := e.users[0]
	g := e.liveGoods(2, 1, 4999)
	o := e.grab(u, g.ID)
	if _, err := e.s.Pay(e.ctx, u, o.ID, 0); err != nil {
		t.Fatal(err)
	}
	e.flush()
	if err := rdb.FlushDB(e.ctx, e.r.Client); err != nil {
		t.Fatal(err)
	}
	r, err := e.s.Refund(e.ctx, u, o.ID)
	if err != nil || r.Status != model.OrderRefunded {
		t.Fatalf("refund from the store = %+v, %v", r, err)
	}
	if s, _, _, _, _ := e.orderRow(o.ID); s != model.OrderRefunded {
		t.Fatalf("stored %s", s)
	}
	if r2, err := e.s.Refund(e.ctx, u, o.ID); err != nil || r2.Status != model.OrderRefunded {
		t.Fatalf("refund again = %+v, %v", r2, err)
	}
}

// The sweep gives back a coupon a crash left claimed for an order that then
// expired, or that was paid without it; it keeps one whose order is still
// unpaid (a pay may be under way) or paid with it.
func TestSweepCoupons(t *testing.T) { eachShards(t, testSweepCoupons) }

func testSweepCoupons(t *testing.T, k int) {
	e := newEnvK(t, k)
	u := e.users[0]
	tpl := e.template(model.CouponAmountOff, 100, 0, 7)
	a, b, c := e.grabCoupon(u, tpl.ID), e.grabCoupon(u, tpl.ID), e.grabCoupon(u, tpl.ID)
	e.flush()
	oa, ob, oc := e.grab(u, e.liveGoods(1, 1, 999).ID), e.grab(u, e.liveGoods(1, 1, 999).ID), e.grab(u, e.liveGoods(1, 1, 999).ID)
	// A crash right after each claim: nothing was paid.
	for _, p := range [][2]int64{{a, oa.ID}, {b, ob.ID}, {c, oc.ID}} {
		if _, err := e.c.Claim(e.ctx, u, p[0], p[1], 999); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.s.Pay(e.ctx, u, ob.ID, 0); err != nil { // paid without its claimed coupon
		t.Fatal(err)
	}
	if n, err := e.s.SweepCoupons(e.ctx); err != nil || n != 1 {
		t.Fatalf("sweep released %d, %v; want 1 (the order paid without it)", n, err)
	}
	if st, _ := e.couponRow(b); st != model.CouponUnused {
		t.Fatalf("coupon b %s", st)
	}
	if st, _ := e.couponRow(a); st != model.CouponUsed {
		t.Fatalf("coupon a %s while its order is unpaid, want kept", st)
	}
	// The retried pay of order c takes its claimed coupon.
	if p, err := e.s.Pay(e.ctx, u, oc.ID, c); err != nil || p.UserCouponID != c {
		t.Fatalf("pay c = %+v, %v", p, err)
	}
	e.clk.Advance(16 * time.Minute)
	if err := e.g.ExpireOrder(e.ctx, oa.ID); err != nil {
		t.Fatal(err)
	}
	if n, err := e.s.SweepCoupons(e.ctx); err != nil || n != 1 {
		t.Fatalf("sweep released %d, %v; want 1 (the expired order's)", n, err)
	}
	if st, _ := e.couponRow(a); st != model.CouponUnused {
		t.Fatalf("coupon a %s after its order expired", st)
	}
	if st, oid := e.couponRow(c); st != model.CouponUsed || oid != oc.ID {
		t.Fatalf("coupon c %s for %d, want kept", st, oid)
	}
}

// The checkout page's options: applicable coupons by discount, then the
// others with the reason.
func TestOptions(t *testing.T) {
	o := &model.Order{ID: 7, AmountCents: 5000}
	now := time.Now()
	cs := []*model.UserCoupon{
		{ID: 1, Status: model.CouponUnused, Kind: model.CouponAmountOff, Value: 500, ValidUntil: now},
		{ID: 2, Status: model.CouponUnused, Kind: model.CouponPercentOff, Value: 20},
		{ID: 3, Status: model.CouponUnused, Kind: model.CouponAmountOff, Value: 2000, MinSpendCents: 6000},
		{ID: 4, Status: model.CouponExpired, Kind: model.CouponAmountOff, Value: 100},
		{ID: 5, Status: "failed", Kind: model.CouponAmountOff, Value: 100},
		{ID: 6, Status: model.CouponUsed, OrderID: 8, Kind: model.CouponAmountOff, Value: 100},
	}
	got := checkout.Options(o, cs)
	want := []struct {
		id       int64
		discount int64
		reason   string
	}{{2, 1000, ""}, {1, 500, ""}, {3, 0, checkout.ReasonBelowMinimum}, {4, 0, checkout.ReasonExpired}, {6, 0, checkout.ReasonUsed}}
	if len(got) != len(want) {
		t.Fatalf("%d options, want %d", len(got), len(want))
	}
	for i, w := range want {
		if got[i].Coupon.ID != w.id || got[i].DiscountCents != w.discount || got[i].Reason != w.reason {
			t.Errorf("option %d = %d %d %q, want %+v", i, got[i].Coupon.ID, got[i].DiscountCents, got[i].Reason, w)
		}
	}
}

// An order past its deadline that the expiry task has not reached yet looks
// unpaid, so the coupon is claimed; the pay script expires it instead, and
// the coupon is given back at once: neither changed.
func TestPayLapsedOrderReleasesCoupon(t *testing.T) { eachShards(t, testPayLapsedOrderReleasesCoupon) }

func testPayLapsedOrderReleasesCoupon(t *testing.T, k int) {
	e := newEnvK(t, k)
	u := e.users[0]
	tpl := e.template(model.CouponAmountOff, 100, 0, 7)
	uc := e.grabCoupon(u, tpl.ID)
	o := e.grab(u, e.liveGoods(1, 1, 999).ID)
	e.clk.Advance(16 * time.Minute)
	_, err := e.s.Pay(e.ctx, u, o.ID, uc)
	wantCode(t, "pay a lapsed order", err, db.EEXPIRED)
	if st, oid := e.couponRow(uc); st != model.CouponUnused || oid != 0 {
		t.Fatalf("coupon %s for order %d after the order lapsed, want unused", st, oid)
	}
	if got, _ := e.g.Order(e.ctx, u, o.ID); got.Status != model.OrderExpired || got.UserCouponID != 0 {
		t.Fatalf("order %+v, want expired without a coupon", got)
	}
}

// A pay with an Idempotency-Key answers the first answer again: the same
// order, and a coupon named by the retry is not taken.
func TestPayIdempotencyKey(t *testing.T) { eachShards(t, testPayIdempotencyKey) }

func testPayIdempotencyKey(t *testing.T, k int) {
	e := newEnvK(t, k)
	u := e.users[0]
	tpl := e.template(model.CouponAmountOff, 200, 0, 7)
	a, b := e.grabCoupon(u, tpl.ID), e.grabCoupon(u, tpl.ID)
	o := e.grab(u, e.liveGoods(1, 1, 999).ID)
	ctx := db.WithIdempotencyKey(e.ctx, "pay-once")
	first, err := e.s.Pay(ctx, u, o.ID, a)
	if err != nil {
		t.Fatal(err)
	}
	second, err := e.s.Pay(ctx, u, o.ID, b)
	if err != nil || second.UserCouponID != a || second.Version != first.Version || second.DiscountCents != 200 {
		t.Fatalf("keyed retry = %+v, %v; want the first answer", second, err)
	}
	if st, _ := e.couponRow(b); st != model.CouponUnused {
		t.Fatalf("coupon b %s after a keyed retry named it", st)
	}
}

// A refund after the sale ended and its goods was retired from the flush
// (every order settled) still reaches the store.
func TestRefundAfterTheSaleWasRetired(t *testing.T) { eachShards(t, testRefundAfterTheSaleWasRetired) }

func testRefundAfterTheSaleWasRetired(t *testing.T, k int) {
	e := newEnvK(t, k)
	u := e.users[0]
	g := e.liveGoods(2, 1, 4999)
	o := e.grab(u, g.ID)
	if _, err := e.s.Pay(e.ctx, u, o.ID, 0); err != nil {
		t.Fatal(err)
	}
	e.flush()
	e.clk.Advance(2 * time.Hour)
	if err := e.g.SyncStock(e.ctx, 0); err != nil {
		t.Fatal(err)
	}
	if n, _ := e.r.Client.SCard(e.ctx, "seckill:goods:active").Result(); n != 0 {
		t.Fatalf("%d goods still active after the sync past the end", n)
	}
	if _, err := e.s.Refund(e.ctx, u, o.ID); err != nil {
		t.Fatal(err)
	}
	e.flush()
	if s, _, _, _, _ := e.orderRow(o.ID); s != model.OrderRefunded {
		t.Fatalf("stored %s after refunding a retired sale's order, want refunded", s)
	}
	mine, err := e.g.MyOrders(e.ctx, u)
	if err != nil || len(mine) != 1 || mine[0].Status != model.OrderRefunded {
		t.Fatalf("my orders %+v, %v", mine, err)
	}
}
