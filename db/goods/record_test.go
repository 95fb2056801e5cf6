package goods_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/db/goods/sale"

	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/model"
)

// An order record round trip, every field: the real scripts write a record
// with each field set to its own value (a grab, a pay with a coupon, then a
// void of the paid order), the Go codec reads each back by name, and the
// flush stores them. A field added to record.go's table but not written by
// the scripts (or not listed here), or one the scripts write past the
// table, fails it.
func TestOrderRecordRoundTrip(t *testing.T) {
	e := newGoodsEnv(t)
	g := e.LiveGoods(9, 1)
	for u := int64(101); u <= 103; u++ { // the order's sequence (4) and unit (6) differ from its version (3)
		e.Grab(u, g.ID)
	}
	created := e.Clk.Now()
	o := e.Grab(4242, g.ID)
	e.Clk.Advance(time.Second)
	paidAt := e.Clk.Now()
	if _, err := e.S.PayWith(e.Ctx, 4242, o.ID, 1234, 77); err != nil {
		t.Fatal(err)
	}
	e.Clk.Advance(time.Second)
	voided := e.Clk.Now()
	code, rec, err := e.S.VoidOrder(e.Ctx, o)
	if err != nil || code != "ok" {
		t.Fatalf("void: %q, %v", code, err)
	}

	ms := func(t time.Time) string { return fmt.Sprint(t.UnixMilli()) }
	want := map[string]string{
		"seq": "4", "user": "4242", "unit": "6", "amount": "4999", "status": model.OrderFailed,
		"created": ms(created), "expires": ms(created.Add(e.S.OrderTTL)), "version": "3", "updated": ms(voided),
		"failure": model.FailureRefundDue, "discount": "1234", "coupon": "77", "paid_at": ms(paidAt),
	}
	// Go and Lua each read what the scripts wrote, every field, and write it back byte for byte.
	got, again, err := sale.OrderRecordFields(rec)
	if err != nil {
		t.Fatalf("Go reads the record the scripts wrote: %v", err)
	}
	luaNames, luaGot, luaAgain, err := e.S.LuaOrderFields(e.Ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	dbtest.CheckRecord(t, "order", rec, sale.OrderFieldNames(), want,
		dbtest.RecordRead{Fields: got, Again: again}, dbtest.RecordRead{Names: luaNames, Fields: luaGot, Again: luaAgain})
	stored, err := e.S.Redis.HGet(e.Ctx, sale.Key(g.ID, "orders"), "4").Result()
	if err != nil || stored != rec {
		t.Errorf("Redis holds %q (%v), the answer carried %q", stored, err, rec)
	}

	// The model takes every field, and so does the store after the flush.
	m, err := sale.ParseOrderRecord(g.ID, rec)
	if err != nil {
		t.Fatal(err)
	}
	_, seq, _ := sale.SplitOrderID(m.ID)
	if seq != 4 || m.UserID != 4242 || m.Unit != 6 || m.AmountCents != 4999 || m.Status != model.OrderFailed ||
		!m.CreatedAt.Equal(created) || !m.ExpiresAt.Equal(created.Add(e.S.OrderTTL)) || m.Version != 3 || !m.UpdatedAt.Equal(voided) ||
		m.Failure != model.FailureRefundDue || m.DiscountCents != 1234 || m.UserCouponID != 77 || m.PaidAt == nil || !m.PaidAt.Equal(paidAt) ||
		m.PaidCents != 4999-1234 {
		t.Errorf("order from the record: %+v", m)
	}
	e.Flush()
	var row struct {
		user, unit, amount, created, expires, updated, version, discount, paid, coupon, paidAt int64
		status, failure                                                                        string
	}
	if err := e.S.SQL.R.QueryRowContext(e.Ctx, `SELECT user_id, unit, amount_cents, status, created_ms, expires_ms, updated_ms, version,
			failure, discount_cents, paid_cents, user_coupon_id, paid_at_ms FROM orders WHERE id = ?`, o.ID).Scan(&row.user, &row.unit,
		&row.amount, &row.status, &row.created, &row.expires, &row.updated, &row.version, &row.failure, &row.discount, &row.paid,
		&row.coupon, &row.paidAt); err != nil {
		t.Fatalf("the flushed order: %v", err)
	}
	fromStore := map[string]string{
		"seq": "4", "user": fmt.Sprint(row.user), "unit": fmt.Sprint(row.unit), "amount": fmt.Sprint(row.amount), "status": row.status,
		"created": fmt.Sprint(row.created), "expires": fmt.Sprint(row.expires), "version": fmt.Sprint(row.version),
		"updated": fmt.Sprint(row.updated), "failure": row.failure, "discount": fmt.Sprint(row.discount),
		"coupon": fmt.Sprint(row.coupon), "paid_at": fmt.Sprint(row.paidAt),
	}
	for _, name := range sale.OrderFieldNames() {
		if fromStore[name] != want[name] {
			t.Errorf("field %s: the store has %q, want %q", name, fromStore[name], want[name])
		}
	}
	if row.paid != 4999-1234 {
		t.Errorf("paid_cents %d, want %d", row.paid, 4999-1234)
	}
}

// Records Go writes (a bucket rebuilt from the store) are records the
// scripts read and write back unchanged; and a record whose length no
// field ends at is refused by both sides.
func TestOrderRecordGoWritesLuaReads(t *testing.T) {
	e := newGoodsEnv(t)
	for _, rec := range []string{
		"4|4242|6|4999|unpaid|1764550000000|1764550900000|1|1764550000000",
		"4|4242|6|4999|failed|1764550000000|1764550900000|2|1764550001000|sold_twice",
		"4|4242|6|4999|paid|1764550000000|1764550900000|2|1764550001000||1234|77|1764550001000",
	} {
		got, again, err := sale.OrderRecordFields(rec)
		if err != nil || again != rec {
			t.Errorf("Go reads %q as %v and writes %q (%v)", rec, got, again, err)
			continue
		}
		_, luaGot, luaAgain, err := e.S.LuaOrderFields(e.Ctx, again)
		if err != nil || luaAgain != rec {
			t.Errorf("Lua writes %q back as %q (%v)", rec, luaAgain, err)
			continue
		}
		for name, v := range got {
			if luaGot[name] != v && !(luaGot[name] == "<none>" && (v == "" || v == "0")) {
				t.Errorf("record %q field %s: Lua read %q, Go %q", rec, name, luaGot[name], v)
			}
		}
	}
	for _, bad := range []string{"4|4242|6|4999|unpaid|1764550000000|1764550900000|1", "4|4242|6|4999|paid|1|2|3|4||5|6"} {
		if _, _, err := sale.OrderRecordFields(bad); err == nil {
			t.Errorf("Go read %q, which no record is", bad)
		}
		if _, _, _, err := e.S.LuaOrderFields(e.Ctx, bad); err == nil || !strings.Contains(err.Error(), "may not end there") {
			t.Errorf("Lua joined %q again: %v", bad, err)
		}
	}
}

// A sample round trip, every field: the real sample script writes it, the
// Go codec and the Lua prelude read each field back by name and write it
// again byte for byte.
func TestSampleRecordRoundTrip(t *testing.T) {
	e := newGoodsEnv(t)
	g := e.LiveGoods(9, 1)
	var first *model.Order
	for u := int64(1); u <= 4; u++ {
		o := e.Grab(u, g.ID)
		if first == nil {
			first = o
		}
	}
	if _, err := e.S.PayOrder(e.Ctx, 1, first.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.S.SampleActive(e.Ctx); err != nil {
		t.Fatal(err)
	}
	recs, err := e.S.Redis.LRange(e.Ctx, sale.Key(g.ID, "samples"), -1, -1).Result()
	if err != nil || len(recs) != 1 {
		t.Fatalf("the sample: %q, %v", recs, err)
	}
	rec := recs[0]
	want := map[string]string{"at": fmt.Sprint(e.Clk.Now().UnixMilli()), "remaining": "5", "unpaid": "3", "paid": "1", "grabs": "4"}
	got, again, err := goods.SampleRecordFields(rec)
	if err != nil {
		t.Fatalf("Go reads the sample %q: %v", rec, err)
	}
	luaNames, luaGot, luaAgain, err := e.S.LuaSampleFields(e.Ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	dbtest.CheckRecord(t, "sample", rec, goods.SampleFieldNames(), want,
		dbtest.RecordRead{Fields: got, Again: again}, dbtest.RecordRead{Names: luaNames, Fields: luaGot, Again: luaAgain})
}
