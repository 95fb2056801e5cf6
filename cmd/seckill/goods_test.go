package main

import (
	"fmt"
	"testing"
	"time"
)

// Every seckill endpoint: the contract's answers, and for bad input the
// contract's code with nothing created or changed.
func TestGoodsHTTPContract(t *testing.T) {
	a := startApp(t)
	mt, mid := a.newMerchant()
	other, _ := a.newMerchant()
	ut, uid := a.newUser()
	u2, _ := a.newUser()
	now := time.Now().UTC()
	at := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }

	// --- slots
	var created struct{ Slot slotJSON }
	if st := a.call("POST", "/api/admin/slots", mt, map[string]string{"title": "Morning", "start_at": at(-time.Minute), "end_at": at(time.Hour)}, &created); st != 201 {
		t.Fatalf("create slot: %d", st)
	}
	live := created.Slot
	if live.ID <= 0 || live.Title != "Morning" || live.State != "live" || live.MerchantID != mid || live.EndAt.Sub(live.StartAt) != time.Hour+time.Minute {
		t.Fatalf("slot %+v", live)
	}
	upcoming := a.createSlot(mt, time.Hour, time.Hour)
	if upcoming.State != "upcoming" {
		t.Fatalf("upcoming slot state %q", upcoming.State)
	}
	countSlots := func() int {
		var out struct{ Slots []slotJSON }
		if st := a.call("GET", "/api/slots", "", nil, &out); st != 200 {
			t.Fatalf("list slots: %d", st)
		}
		return len(out.Slots)
	}
	if n := countSlots(); n != 2 {
		t.Fatalf("%d slots listed, want 2", n)
	}
	for _, tc := range []struct {
		name   string
		token  string
		body   any
		status int
		code   string
	}{
		{"anonymous", "", map[string]string{"title": "x", "start_at": at(0), "end_at": at(time.Hour)}, 401, "unauthorized"},
		{"shopper", ut, map[string]string{"title": "x", "start_at": at(0), "end_at": at(time.Hour)}, 403, "forbidden"},
		{"not JSON", mt, `{"title": "x",`, 400, "invalid"},
		{"JSON of the wrong shape", mt, `[1, 2]`, 400, "invalid"},
		{"end before start", mt, map[string]string{"title": "x", "start_at": at(time.Hour), "end_at": at(time.Minute)}, 400, "invalid"},
		{"end equals start", mt, map[string]string{"title": "x", "start_at": at(time.Hour), "end_at": at(time.Hour)}, 400, "invalid"},
		{"already over", mt, map[string]string{"title": "x", "start_at": at(-2 * time.Hour), "end_at": at(-time.Hour)}, 400, "invalid"},
		{"missing times", mt, map[string]string{"title": "x"}, 400, "invalid"},
		{"not a time", mt, map[string]string{"title": "x", "start_at": "tomorrow", "end_at": at(time.Hour)}, 400, "invalid"},
		{"blank title", mt, map[string]string{"title": " ", "start_at": at(0), "end_at": at(time.Hour)}, 400, "invalid"},
		{"title of the wrong type", mt, map[string]any{"title": 7, "start_at": at(0), "end_at": at(time.Hour)}, 400, "invalid"},
	} {
		t.Run("create slot: "+tc.name, func(t *testing.T) { a.wantError("POST", "/api/admin/slots", tc.token, tc.body, tc.status, tc.code) })
	}
	if n := countSlots(); n != 2 {
		t.Fatalf("bad slot requests created slots: %d listed", n)
	}

	// --- goods
	goodsBody := func(edit func(map[string]any)) map[string]any {
		b := map[string]any{"slot_id": live.ID, "title": "Phone", "description": "fast", "price_cents": 199900,
			"seckill_price_cents": 99900, "stock": 3}
		if edit != nil {
			edit(b)
		}
		return b
	}
	var gAns struct{ Goods goodsJSON }
	if st := a.call("POST", "/api/admin/goods", mt, goodsBody(nil), &gAns); st != 201 {
		t.Fatalf("create goods: %d", st)
	}
	g := gAns.Goods
	if g.ID <= 0 || g.SlotID != live.ID || g.Title != "Phone" || g.PriceCents != 199900 || g.SeckillPriceCents != 99900 ||
		g.Stock != 3 || g.Remaining != 3 || g.LimitPerUser != 1 {
		t.Fatalf("goods %+v (limit left out must mean 1)", g)
	}
	later := a.createGoods(mt, upcoming.ID, 5, 0)
	countGoods := func(slot int64) int {
		var out struct{ Goods []goodsJSON }
		if st := a.call("GET", fmt.Sprintf("/api/slots/%d/goods", slot), "", nil, &out); st != 200 {
			t.Fatalf("slot goods: %d", st)
		}
		return len(out.Goods)
	}
	for _, tc := range []struct {
		name   string
		token  string
		body   any
		status int
		code   string
	}{
		{"anonymous", "", goodsBody(nil), 401, "unauthorized"},
		{"shopper", ut, goodsBody(nil), 403, "forbidden"},
		{"not JSON", mt, `slot_id=1`, 400, "invalid"},
		{"zero stock", mt, goodsBody(func(b map[string]any) { b["stock"] = 0 }), 400, "invalid"},
		{"negative stock", mt, goodsBody(func(b map[string]any) { b["stock"] = -4 }), 400, "invalid"},
		{"missing stock", mt, goodsBody(func(b map[string]any) { delete(b, "stock") }), 400, "invalid"},
		{"negative price", mt, goodsBody(func(b map[string]any) { b["price_cents"] = -1 }), 400, "invalid"},
		{"negative seckill price", mt, goodsBody(func(b map[string]any) { b["seckill_price_cents"] = -100 }), 400, "invalid"},
		{"fractional cents", mt, goodsBody(func(b map[string]any) { b["price_cents"] = 10.5 }), 400, "invalid"},
		{"price as a string", mt, goodsBody(func(b map[string]any) { b["price_cents"] = "100" }), 400, "invalid"},
		{"negative limit", mt, goodsBody(func(b map[string]any) { b["limit_per_user"] = -1 }), 400, "invalid"},
		{"blank title", mt, goodsBody(func(b map[string]any) { b["title"] = "" }), 400, "invalid"},
		{"stock over int64", mt, fmt.Sprintf(`{"slot_id": %d, "title": "x", "price_cents": 1, "seckill_price_cents": 1, "stock": 99999999999999999999}`, live.ID), 400, "invalid"},
		{"price over int64", mt, fmt.Sprintf(`{"slot_id": %d, "title": "x", "price_cents": 9223372036854775808, "seckill_price_cents": 1, "stock": 1}`, live.ID), 400, "invalid"},
		{"price below int64", mt, fmt.Sprintf(`{"slot_id": %d, "title": "x", "price_cents": -9223372036854775809, "seckill_price_cents": 1, "stock": 1}`, live.ID), 400, "invalid"},
		{"huge stock within int64", mt, goodsBody(func(b map[string]any) { b["stock"] = int64(1) << 62 }), 400, "invalid"},
		{"no slot", mt, goodsBody(func(b map[string]any) { delete(b, "slot_id") }), 400, "invalid"},
		{"unknown slot", mt, goodsBody(func(b map[string]any) { b["slot_id"] = 999999 }), 404, "not_found"},
		{"another merchant's slot", other, goodsBody(nil), 404, "not_found"},
	} {
		t.Run("create goods: "+tc.name, func(t *testing.T) { a.wantError("POST", "/api/admin/goods", tc.token, tc.body, tc.status, tc.code) })
	}
	if n := countGoods(live.ID); n != 1 {
		t.Fatalf("bad goods requests created goods: %d in the slot", n)
	}

	// --- reading
	for _, tc := range []struct{ path, code string }{
		{"/api/slots/999999/goods", "not_found"},
		{"/api/slots/abc/goods", "invalid"},
		{"/api/slots/-1/goods", "invalid"},
		{"/api/slots/0/goods", "invalid"},
		{"/api/slots/99999999999999999999/goods", "invalid"},
		{"/api/goods/999999", "not_found"},
		{"/api/goods/x1", "invalid"},
		{"/api/goods/1.5", "invalid"},
		{"/api/goods/99999999999999999999", "invalid"},
	} {
		status := map[string]int{"not_found": 404, "invalid": 400}[tc.code]
		a.wantError("GET", tc.path, "", nil, status, tc.code)
	}
	if got := a.goods(g.ID); got.Remaining != 3 || got.Title != "Phone" {
		t.Fatalf("GET goods: %+v", got)
	}

	// --- grab
	a.wantError("POST", fmt.Sprintf("/api/goods/%d/grab", g.ID), "", nil, 401, "unauthorized")
	a.wantError("POST", fmt.Sprintf("/api/goods/%d/grab", g.ID), "not-a-token", nil, 401, "unauthorized")
	a.wantError("POST", "/api/goods/999999/grab", ut, nil, 404, "not_found")
	a.wantError("POST", "/api/goods/abc/grab", ut, nil, 400, "invalid")
	a.wantError("POST", "/api/goods/99999999999999999999/grab", ut, nil, 400, "invalid")
	a.wantError("POST", fmt.Sprintf("/api/goods/%d/grab", later.ID), ut, nil, 409, "not_started")
	o := a.grab(ut, g.ID)
	if o.ID <= 0 || o.ID >= 1<<53 || o.GoodsID != g.ID || o.UserID != uid || o.AmountCents != 99900 || o.Status != "unpaid" {
		t.Fatalf("order %+v", o)
	}
	if d := time.Until(o.ExpiresAt); d < 29*time.Minute || d > 31*time.Minute {
		t.Fatalf("expires_at %s is not ORDER_TTL (30m) from now", o.ExpiresAt)
	}
	a.wantError("POST", fmt.Sprintf("/api/goods/%d/grab", g.ID), ut, nil, 409, "limit_reached")
	if got := a.goods(g.ID); got.Remaining != 2 {
		t.Fatalf("remaining after grab %d, want 2", got.Remaining)
	}

	// --- orders
	if got := a.order(ut, o.ID); got != o {
		t.Fatalf("GET order %+v, want %+v", got, o)
	}
	a.wantError("GET", fmt.Sprintf("/api/orders/%d", o.ID), u2, nil, 404, "not_found")
	a.wantError("GET", fmt.Sprintf("/api/orders/%d", o.ID), "", nil, 401, "unauthorized")
	a.wantError("GET", fmt.Sprintf("/api/orders/%d", o.ID+1), ut, nil, 404, "not_found")
	a.wantError("GET", "/api/orders/12", ut, nil, 404, "not_found")
	a.wantError("GET", "/api/orders/abc", ut, nil, 400, "invalid")
	a.wantError("GET", "/api/orders/99999999999999999999", ut, nil, 400, "invalid")
	var mine struct{ Orders []orderJSON }
	if st := a.call("GET", "/api/me/orders", ut, nil, &mine); st != 200 || len(mine.Orders) != 1 || mine.Orders[0].ID != o.ID {
		t.Fatalf("my orders: %d %+v", st, mine)
	}
	if st := a.call("GET", "/api/me/orders", u2, nil, &mine); st != 200 || len(mine.Orders) != 0 {
		t.Fatalf("someone else's orders: %d %+v", st, mine)
	}
	a.wantError("GET", "/api/me/orders", "", nil, 401, "unauthorized")

	// --- pay and cancel
	a.wantError("POST", fmt.Sprintf("/api/orders/%d/pay", o.ID), u2, nil, 404, "not_found")
	a.wantError("POST", fmt.Sprintf("/api/orders/%d/cancel", o.ID), u2, nil, 404, "not_found")
	a.wantError("POST", "/api/orders/abc/pay", ut, nil, 400, "invalid")
	a.wantError("POST", fmt.Sprintf("/api/orders/%d/pay", o.ID+7), ut, nil, 404, "not_found")
	if got := a.order(ut, o.ID); got.Status != "unpaid" {
		t.Fatalf("someone else's pay changed the order: %q", got.Status)
	}
	var paid struct{ Order orderJSON }
	for i := 0; i < 2; i++ { // paying again answers 200, unchanged
		if st := a.call("POST", fmt.Sprintf("/api/orders/%d/pay", o.ID), ut, nil, &paid); st != 200 || paid.Order.Status != "paid" || paid.Order.ID != o.ID {
			t.Fatalf("pay #%d: %d %+v", i+1, st, paid)
		}
	}
	a.wantError("POST", fmt.Sprintf("/api/orders/%d/cancel", o.ID), ut, nil, 409, "conflict")
	o2 := a.grab(u2, g.ID)
	var cancelled struct{ Order orderJSON }
	if st := a.call("POST", fmt.Sprintf("/api/orders/%d/cancel", o2.ID), u2, nil, &cancelled); st != 200 || cancelled.Order.Status != "cancelled" {
		t.Fatalf("cancel: %d %+v", st, cancelled)
	}
	if got := a.goods(g.ID); got.Remaining != 2 {
		t.Fatalf("remaining after cancel %d, want the unit back (2)", got.Remaining)
	}
	a.wantError("POST", fmt.Sprintf("/api/orders/%d/pay", o2.ID), u2, nil, 409, "expired")

	// --- sold out
	a.grab(u2, g.ID)
	u3, _ := a.newUser()
	a.grab(u3, g.ID)
	u4, _ := a.newUser()
	a.wantError("POST", fmt.Sprintf("/api/goods/%d/grab", g.ID), u4, nil, 409, "sold_out")

	// --- stats
	a.wantError("GET", fmt.Sprintf("/api/admin/goods/%d/stats", g.ID), ut, nil, 403, "forbidden")
	a.wantError("GET", fmt.Sprintf("/api/admin/goods/%d/stats", g.ID), other, nil, 404, "not_found")
	a.wantError("GET", "/api/admin/goods/999999/stats", mt, nil, 404, "not_found")
	a.wantError("GET", "/api/admin/goods/abc/stats", mt, nil, 400, "invalid")
	eventually(t, 5*time.Second, "the flush to bring SQLite in line", func() bool {
		st := a.stats(mt, g.ID)
		return st.DB.Unpaid == 2 && st.DB.Paid == 1 && st.DB.Cancelled == 1
	})
	st := a.stats(mt, g.ID)
	if st.Stock != 3 || st.Remaining != 0 || st.Unpaid != 2 || st.Paid != 1 || st.Cancelled != 1 || st.Remaining+st.Unpaid+st.Paid != st.Stock {
		t.Fatalf("stats %+v", st)
	}

	// --- edits
	a.wantError("PUT", fmt.Sprintf("/api/admin/goods/%d", g.ID), mt, goodsBody(func(b map[string]any) { b["stock"] = 50 }), 409, "conflict")
	a.wantError("PUT", fmt.Sprintf("/api/admin/goods/%d", later.ID), mt, goodsBody(func(b map[string]any) { b["stock"] = -1 }), 400, "invalid")
	a.wantError("PUT", fmt.Sprintf("/api/admin/goods/%d", later.ID), other, goodsBody(nil), 404, "not_found")
	a.wantError("PUT", fmt.Sprintf("/api/admin/slots/%d", upcoming.ID), mt, map[string]string{"title": "x", "start_at": at(3 * time.Hour), "end_at": at(2 * time.Hour)}, 400, "invalid")
	a.wantError("PUT", fmt.Sprintf("/api/admin/slots/%d", live.ID), mt, map[string]string{"title": "x", "start_at": at(time.Hour), "end_at": at(2 * time.Hour)}, 409, "conflict")
	if got := a.goods(later.ID); got.Stock != 5 || got.Remaining != 5 {
		t.Fatalf("refused edits changed goods: %+v", got)
	}
	var edited struct{ Goods goodsJSON }
	if st := a.call("PUT", fmt.Sprintf("/api/admin/goods/%d", later.ID), mt, goodsBody(func(b map[string]any) { b["stock"] = 7; b["slot_id"] = upcoming.ID }), &edited); st != 200 || edited.Goods.Stock != 7 || edited.Goods.Remaining != 7 {
		t.Fatalf("edit upcoming goods: %d %+v", st, edited)
	}
	var mySlots struct{ Slots []slotJSON }
	if st := a.call("GET", "/api/admin/slots", other, nil, &mySlots); st != 200 || len(mySlots.Slots) != 0 {
		t.Fatalf("another merchant sees %d slots", len(mySlots.Slots))
	}
}
