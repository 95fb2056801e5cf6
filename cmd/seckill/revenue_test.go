package main

import (
	"fmt"
	"testing"
	"time"
)

// revenueJSON is the revenue of a goods' or a slot's figures.
type revenueJSON struct {
	RevenueCents  int64 `json:"revenue_cents"`
	DiscountCents int64 `json:"discount_cents"`
	NetCents      int64 `json:"net_cents"`
}

// goodsPriced has the merchant put goods at a seckill price in the slot.
func (a *testApp) goodsPriced(token string, slotID, priceCents, stock int64) goodsJSON {
	a.T.Helper()
	var out struct{ Goods goodsJSON }
	body := map[string]any{"slot_id": slotID, "title": "Priced " + fmt.Sprint(userSeq.Add(1)), "price_cents": priceCents + 10000,
		"seckill_price_cents": priceCents, "stock": stock, "limit_per_user": 1}
	if st := a.call("POST", "/api/admin/goods", token, body, &out); st != 201 {
		a.T.Fatalf("create goods: %d", st)
	}
	return out.Goods
}

// slotRevenue reads a slot's totals and its goods' figures.
func (a *testApp) slotRevenue(token string, slotID int64) (totals revenueJSON, goods []revenueJSON) {
	a.T.Helper()
	var out struct {
		Totals revenueJSON
		Goods  []struct {
			Stats revenueJSON `json:"stats"`
		}
	}
	if st := a.call("GET", fmt.Sprintf("/api/admin/slots/%d/stats", slotID), token, nil, &out); st != 200 {
		a.T.Fatalf("slot stats: %d", st)
	}
	for _, g := range out.Goods {
		goods = append(goods, g.Stats)
	}
	return out.Totals, goods
}

// Revenue is shown as gross, discount and net: a ¥999.00 order paid with a
// 15% coupon counts ¥999.00 gross, ¥149.85 discount and ¥849.15 net, in
// Redis and, once flushed, in the store alike (no drift); another order paid
// without a coupon adds to gross and net only; a refund takes its share
// back out of all three.
func TestRevenueGrossDiscountNet(t *testing.T) {
	a := startApp(t)
	mt, _ := a.newMerchant()
	sl := a.createSlot(mt, -time.Minute, time.Hour)
	g := a.goodsPriced(mt, sl.ID, 99900, 5)
	cp := a.couponTemplate(mt, "percent_off", 15, 0, 7)

	u, _ := a.newUser()
	uc := a.grabCoupon(u, cp.ID)
	o := a.grab(u, g.ID)
	if st, paid := a.pay(u, o.ID, uc.ID); st != 200 || paid.PaidCents != 84915 || paid.DiscountCents != 14985 {
		t.Fatalf("pay with the coupon: %d %+v", st, paid)
	}
	want := revenueJSON{RevenueCents: 99900, DiscountCents: 14985, NetCents: 84915}
	totals, goods := a.slotRevenue(mt, sl.ID)
	if totals != want || len(goods) != 1 || goods[0] != want {
		t.Fatalf("after a coupon: totals %+v, goods %+v; want %+v", totals, goods, want)
	}

	v, _ := a.newUser()
	o2 := a.grab(v, g.ID)
	if st, _ := a.pay(v, o2.ID, 0); st != 200 {
		t.Fatalf("pay: %d", st)
	}
	want = revenueJSON{RevenueCents: 199800, DiscountCents: 14985, NetCents: 184815}
	if totals, _ = a.slotRevenue(mt, sl.ID); totals != want {
		t.Fatalf("after a second order: totals %+v, want %+v", totals, want)
	}

	// The store agrees once the flush has run.
	var st struct {
		revenueJSON
		DB    revenueJSON `json:"db"`
		Drift []string    `json:"drift"`
	}
	eventually(t, 30*time.Second, "the store's revenue to agree", func() bool {
		if code := a.call("GET", fmt.Sprintf("/api/admin/goods/%d/stats", g.ID), mt, nil, &st); code != 200 {
			t.Fatalf("goods stats: %d", code)
		}
		return len(st.Drift) == 0 && st.DB.DiscountCents == 14985 && st.DB.RevenueCents == 199800
	})
	if st.revenueJSON != want {
		t.Fatalf("goods stats %+v, want %+v", st.revenueJSON, want)
	}

	// A refund takes the coupon order's share out of all three.
	if code := a.call("POST", fmt.Sprintf("/api/orders/%d/refund", o.ID), u, nil, nil); code != 200 {
		t.Fatalf("refund: %d", code)
	}
	want = revenueJSON{RevenueCents: 99900, DiscountCents: 0, NetCents: 99900}
	if totals, _ = a.slotRevenue(mt, sl.ID); totals != want {
		t.Fatalf("after the refund: totals %+v, want %+v", totals, want)
	}
	eventually(t, 30*time.Second, "the store's revenue to agree after the refund", func() bool {
		a.call("GET", fmt.Sprintf("/api/admin/goods/%d/stats", g.ID), mt, nil, &st)
		return len(st.Drift) == 0 && st.DB.DiscountCents == 0 && st.DB.RevenueCents == 99900
	})
}
