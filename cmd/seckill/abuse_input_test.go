package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// wantInvalid calls the API and fails t unless it answers 400 invalid with a
// message that names field.
func (a *testApp) wantInvalid(t *testing.T, method, path, token string, body any, field string) {
	t.Helper()
	var e apiError
	if got := a.call(method, path, token, body, &e); got != 400 || e.Error.Code != "invalid" || !strings.Contains(e.Error.Message, field) {
		t.Errorf("%s %s: got %d %q (%s), want 400 invalid naming %s", method, path, got, e.Error.Code, e.Error.Message, field)
	}
}

// inputSnapshot is what the merchant's and the user's lists say, as raw JSON,
// to prove that refused input created and changed nothing.
func (a *testApp) inputSnapshot(merchant, user string, slotIDs ...int64) map[string]string {
	a.T.Helper()
	paths := []struct{ path, token string }{
		{"/api/admin/slots", merchant}, {"/api/admin/coupons", merchant}, {"/api/admin/redpackets", merchant}, {"/api/me/settings", user},
	}
	for _, id := range slotIDs {
		paths = append(paths, struct{ path, token string }{fmt.Sprintf("/api/slots/%d/goods", id), ""})
	}
	snap := map[string]string{}
	for _, p := range paths {
		var raw rawJSON
		if st := a.call("GET", p.path, p.token, nil, &raw); st != 200 {
			a.T.Fatalf("GET %s: %d", p.path, st)
		}
		snap[p.path] = string(raw)
	}
	return snap
}

type rawJSON []byte

func (r *rawJSON) UnmarshalJSON(b []byte) error { *r = append((*r)[:0], b...); return nil }

// Issue 10, point 6: each input measured as accepted before (control
// characters in titles, a 100,000-character email, a seckill price above the
// list price, a price left out, min_spend_cents near 2^63, grab windows to
// year 9999) is refused with 400 invalid naming the field, on create and on
// update, and leaves every list as it was.
func TestAbuseInputRules(t *testing.T) {
	a := startApp(t)
	mt, _ := a.newMerchant()
	ut, _ := a.newUser()
	now := time.Now().UTC()
	at := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	live := a.createSlot(mt, -time.Minute, time.Hour)
	upcoming := a.createSlot(mt, 2*time.Hour, time.Hour)
	g := a.createGoods(mt, upcoming.ID, 5, 1)
	cp := a.couponCreate(mt, "Five off", 10, 1, now.Add(2*time.Hour), now.Add(3*time.Hour))
	a.createRedPacket(mt, map[string]any{"title": "Lucky", "total_cents": 1000, "count": 10, "mode": "random"})
	a.couponSettings(ut, map[string]string{"email": "ann@example.com"})
	before := a.inputSnapshot(mt, ut, live.ID, upcoming.ID)

	with := func(base map[string]any, kv ...any) map[string]any {
		b := map[string]any{}
		for k, v := range base {
			b[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(b, kv[i].(string))
			} else {
				b[kv[i].(string)] = kv[i+1]
			}
		}
		return b
	}
	slot := map[string]any{"title": "Noon", "start_at": at(time.Hour), "end_at": at(2 * time.Hour)}
	goods := map[string]any{"slot_id": live.ID, "title": "Phone", "description": "fast", "price_cents": 199900,
		"seckill_price_cents": 99900, "stock": 3}
	coupon := map[string]any{"title": "Ten off", "kind": "amount_off", "value": 1000, "min_spend_cents": 5000, "stock": 100,
		"grab_start_at": at(time.Hour), "grab_end_at": at(2 * time.Hour)}
	packet := map[string]any{"title": "New year", "total_cents": 1000, "count": 10, "mode": "random"}
	year9999 := "9999-12-31T00:00:00Z"
	longTitle := strings.Repeat("é", 101)

	for _, tc := range []struct {
		name, method, path, token string
		body                      any
		field                     string
	}{
		// text
		{"slot title with NUL", "POST", "/api/admin/slots", mt, with(slot, "title", "No\x00on"), "title"},
		{"slot title with ESC", "POST", "/api/admin/slots", mt, with(slot, "title", "\x1b[2JNoon"), "title"},
		{"slot title too long", "POST", "/api/admin/slots", mt, with(slot, "title", longTitle), "title"},
		{"slot renamed with ESC", "PUT", fmt.Sprintf("/api/admin/slots/%d", upcoming.ID), mt,
			map[string]any{"title": "Soon\x1b[31m", "start_at": upcoming.StartAt, "end_at": upcoming.EndAt}, "title"},
		{"goods title with NUL", "POST", "/api/admin/goods", mt, with(goods, "title", "Pho\x00ne"), "title"},
		{"goods title with ESC", "POST", "/api/admin/goods", mt, with(goods, "title", "\x1b]0;owned\aPhone"), "title"},
		{"goods title with a bidi override", "POST", "/api/admin/goods", mt, with(goods, "title", "Phone\u202egpj.exe"), "title"},
		{"goods title with a newline", "POST", "/api/admin/goods", mt, with(goods, "title", "Pho\nne"), "title"},
		{"goods title too long", "POST", "/api/admin/goods", mt, with(goods, "title", longTitle), "title"},
		{"goods description with NUL", "POST", "/api/admin/goods", mt, with(goods, "description", "fast\x00"), "description"},
		{"goods description too long", "POST", "/api/admin/goods", mt, with(goods, "description", strings.Repeat("x", 2001)), "description"},
		{"coupon title with NUL", "POST", "/api/admin/coupons", mt, with(coupon, "title", "Ten\x00off"), "title"},
		{"coupon title with ESC", "POST", "/api/admin/coupons", mt, with(coupon, "title", "Ten off\x1b[0m"), "title"},
		{"red packet title with NUL", "POST", "/api/admin/redpackets", mt, with(packet, "title", "New\x00year"), "title"},
		{"red packet title with ESC", "POST", "/api/admin/redpackets", mt, with(packet, "title", "\x1b[5mNew year"), "title"},
		{"email of 60,000 characters", "PUT", "/api/me/settings", ut, map[string]string{"email": strings.Repeat("a", 60_000) + "@example.com"}, "email"},
		{"email of 255 bytes", "PUT", "/api/me/settings", ut, map[string]string{"email": strings.Repeat("a", 64) + "@" + strings.Repeat("b", 186) + ".com"}, "email"},
		{"email with NUL", "PUT", "/api/me/settings", ut, map[string]string{"email": "eve\x00@example.com"}, "email"},
		{"email with a newline", "PUT", "/api/me/settings", ut, map[string]string{"email": "eve@example.com\nBcc: all@example.com"}, "email"},
		{"webhook URL with ESC", "PUT", "/api/me/settings", ut, map[string]string{"webhook_url": "https://example.com/\x1b[31m"}, "webhook_url"},
		{"webhook URL over 2048", "PUT", "/api/me/settings", ut, map[string]string{"webhook_url": "https://example.com/" + strings.Repeat("x", 2048)}, "webhook_url"},

		// prices and amounts
		{"seckill price above list price", "POST", "/api/admin/goods", mt, with(goods, "seckill_price_cents", 199901), "seckill_price_cents"},
		{"price left out", "POST", "/api/admin/goods", mt, with(goods, "price_cents", nil), "price_cents"},
		{"seckill price left out", "POST", "/api/admin/goods", mt, with(goods, "seckill_price_cents", nil), "seckill_price_cents"},
		{"price over a million", "POST", "/api/admin/goods", mt, with(goods, "price_cents", 100_000_001), "price_cents"},
		{"price 2^62", "POST", "/api/admin/goods", mt, with(goods, "price_cents", int64(1)<<62), "price_cents"},
		{"min_spend_cents 2^62", "POST", "/api/admin/coupons", mt, with(coupon, "min_spend_cents", int64(1)<<62), "min_spend_cents"},
		{"amount off 2^62", "POST", "/api/admin/coupons", mt, with(coupon, "value", int64(1)<<62, "min_spend_cents", 0), "value"},
		{"percent off 100", "POST", "/api/admin/coupons", mt, with(coupon, "kind", "percent_off", "value", 100), "value"},
		{"valid_days 3651", "POST", "/api/admin/coupons", mt, with(coupon, "valid_days", 3651), "valid_days"},
		{"coupon limit 1001", "POST", "/api/admin/coupons", mt, with(coupon, "limit_per_user", 1001), "limit_per_user"},
		{"red packet over a million", "POST", "/api/admin/redpackets", mt, with(packet, "total_cents", 100_000_010), "total"},
		{"red packet 2^62", "POST", "/api/admin/redpackets", mt, with(packet, "total_cents", int64(1)<<62), "total"},
		{"red packet for a year", "POST", "/api/admin/redpackets", mt, with(packet, "expires_in", "8760h"), "expires_in"},

		// windows
		{"slot opening in year 9999", "POST", "/api/admin/slots", mt, with(slot, "start_at", "9999-12-30T00:00:00Z", "end_at", year9999), "start_at"},
		{"coupon window ending in year 9999", "POST", "/api/admin/coupons", mt, with(coupon, "grab_end_at", year9999), "grab_end_at"},
		{"coupon window opening in year 9999", "POST", "/api/admin/coupons", mt,
			with(coupon, "grab_start_at", "9999-12-30T00:00:00Z", "grab_end_at", year9999), "grab_start_at"},
		{"coupon window of 8 days", "POST", "/api/admin/coupons", mt, with(coupon, "grab_end_at", at(time.Hour+8*24*time.Hour)), "grab_end_at"},

		// the same rules on update
		{"goods updated above list price", "PUT", fmt.Sprintf("/api/admin/goods/%d", g.ID), mt,
			with(goods, "slot_id", upcoming.ID, "seckill_price_cents", 299900), "seckill_price_cents"},
		{"goods updated without a price", "PUT", fmt.Sprintf("/api/admin/goods/%d", g.ID), mt, with(goods, "price_cents", nil), "price_cents"},
		{"goods renamed with NUL", "PUT", fmt.Sprintf("/api/admin/goods/%d", g.ID), mt,
			map[string]any{"title": "Goods\x00", "price_cents": g.PriceCents, "seckill_price_cents": g.SeckillPriceCents, "stock": g.Stock, "limit_per_user": g.LimitPerUser}, "title"},
		{"coupon window moved to year 9999", "PUT", fmt.Sprintf("/api/admin/coupons/%d", cp.ID), mt,
			map[string]string{"grab_start_at": at(2 * time.Hour), "grab_end_at": year9999}, "grab_end_at"},
		{"coupon window moved past a year ahead", "PUT", fmt.Sprintf("/api/admin/coupons/%d", cp.ID), mt,
			map[string]string{"grab_start_at": at(400 * 24 * time.Hour), "grab_end_at": at(400*24*time.Hour + time.Hour)}, "grab_start_at"},
		{"slot moved to year 9999", "PUT", fmt.Sprintf("/api/admin/slots/%d", upcoming.ID), mt,
			map[string]any{"title": upcoming.Title, "start_at": "9999-12-30T00:00:00Z", "end_at": year9999}, "start_at"},
	} {
		t.Run(tc.name, func(t *testing.T) { a.wantInvalid(t, tc.method, tc.path, tc.token, tc.body, tc.field) })
	}

	// A 100,000-character email is refused too: as invalid, or as too large
	// where the route's body limit stops it first.
	var e apiError
	if st := a.call("PUT", "/api/me/settings", ut, map[string]string{"email": strings.Repeat("a", 100_000) + "@example.com"}, &e); !(st == 400 && e.Error.Code == "invalid") && !(st == 413 && e.Error.Code == "too_large") {
		t.Errorf("100,000-character email: got %d %q (%s), want 400 invalid or 413 too_large", st, e.Error.Code, e.Error.Message)
	}

	after := a.inputSnapshot(mt, ut, live.ID, upcoming.ID)
	for path, was := range before {
		if after[path] != was {
			t.Errorf("refused input changed %s:\n-want %s\n+got  %s", path, was, after[path])
		}
	}

	// What the rules allow still goes through: the top price, equal prices, a
	// description of several lines, a week-long grab window.
	var ok struct{ Goods goodsJSON }
	desc := "Fast.\r\n\t- 5G\n- 256 GB"
	if st := a.call("POST", "/api/admin/goods", mt, with(goods, "price_cents", 100_000_000, "seckill_price_cents", 100_000_000, "description", desc), &ok); st != 201 ||
		ok.Goods.PriceCents != 100_000_000 || ok.Goods.Description != desc {
		t.Errorf("goods at the bounds: %d %+v", st, ok.Goods)
	}
	if st := a.call("POST", "/api/admin/coupons", mt, with(coupon, "grab_end_at", at(time.Hour+7*24*time.Hour), "min_spend_cents", 100_000_000), nil); st != 201 {
		t.Errorf("coupon at the bounds: %d", st)
	}
}
