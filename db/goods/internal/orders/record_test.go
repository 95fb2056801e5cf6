package orders_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/goods/goodstest"
	"github.com/seckill/seckill/db/goods/internal/sale"
	"github.com/seckill/seckill/db/model"
)

// An order record round trip, every field: the real scripts write a record
// with each field set to its own value (a grab, a pay with a coupon, then a
// void of the paid order), the Go codec reads each back by name, and the
// flush stores them. A field added to record.go's table but not written by
// the scripts (or not listed here), or one the scripts write past the
// table, fails it.
func TestOrderRecordRoundTrip(t *testing.T) {
	e := goodstest.New(t)
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
	got, again, err := goodstest.OrderRecordFields(rec)
	if err != nil {
		t.Fatalf("Go reads the record the scripts wrote: %v", err)
	}
	luaNames, luaGot, luaAgain, err := sale.OrderFields.Echo(e.Ctx, e.S.Redis, rec)
	if err != nil {
		t.Fatal(err)
	}
	dbtest.CheckRecord(t, "order", rec, sale.OrderFields.Names(), want,
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
	for _, name := range sale.OrderFields.Names() {
		if fromStore[name] != want[name] {
			t.Errorf("field %s: the store has %q, want %q", name, fromStore[name], want[name])
		}
	}
	if row.paid != 4999-1234 {
		t.Errorf("paid_cents %d, want %d", row.paid, 4999-1234)
	}
}
