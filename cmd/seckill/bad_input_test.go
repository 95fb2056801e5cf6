package main

import (
	"fmt"
	"maps"
	"testing"
	"time"
)

// plus is body with the fields kv (name, value, …) added or replaced.
func plus(body map[string]any, kv ...any) map[string]any {
	out := maps.Clone(body)
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// An admin write refuses a field its body does not have: 400 invalid
// naming it, nothing changed and nothing audited, on every admin route
// that takes a JSON body; the same body without it is taken.
func TestAdminWritesRefuseUnknownFields(t *testing.T) {
	a := startApp(t)
	admin := a.adminToken()
	mt, _ := a.newMerchant()
	ut, _ := a.newUser()
	now := a.Clock.Now().UTC()
	at := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	live := a.createSlot(mt, -time.Minute, time.Hour)
	upcoming := a.createSlot(mt, 2*time.Hour, time.Hour)
	g := a.createGoods(mt, live.ID, 5, 1)
	cp := a.couponCreate(mt, "Five off", 10, 1, now.Add(2*time.Hour), now.Add(3*time.Hour))
	o := a.grab(ut, g.ID)
	if st, _ := a.pay(ut, o.ID, 0); st != 200 {
		t.Fatalf("pay: %d", st)
	}
	var queued struct{ Goods goodsJSON }
	if st := a.call("POST", "/api/admin/goods", mt, map[string]any{"slot_id": upcoming.ID, "title": "Queued", "price_cents": 100,
		"seckill_price_cents": 50, "stock": 3, "mode": "queue"}, &queued); st != 201 {
		t.Fatalf("queued goods: %d", st)
	}
	slot := map[string]any{"title": "Evening", "start_at": at(3 * time.Hour), "end_at": at(4 * time.Hour)}
	goods := map[string]any{"slot_id": upcoming.ID, "title": "Kettle", "description": "steel", "price_cents": 3000,
		"seckill_price_cents": 1000, "stock": 2, "limit_per_user": 1}
	coupon := map[string]any{"title": "Ten off", "kind": "amount_off", "value": 1000, "min_spend_cents": 0, "stock": 5,
		"limit_per_user": 1, "grab_start_at": at(time.Hour), "grab_end_at": at(2 * time.Hour), "valid_days": 3}
	for _, w := range []struct {
		method, path, token string
		body                map[string]any
	}{
		{"PUT", "/api/admin/switches", admin, map[string]any{"pow_floor_bits": 4}},
		{"POST", "/api/admin/users", admin, map[string]any{"username": fmt.Sprintf("extra_%d", userSeq.Add(1)), "password": "password123", "role": "merchant"}},
		{"POST", "/api/admin/slots", mt, slot},
		{"PUT", fmt.Sprintf("/api/admin/slots/%d", upcoming.ID), mt, slot},
		{"PUT", fmt.Sprintf("/api/admin/slots/%d", upcoming.ID), mt, map[string]any{"hidden": false}},
		{"POST", "/api/admin/goods", mt, goods},
		{"PUT", fmt.Sprintf("/api/admin/goods/%d", queued.Goods.ID), mt, goods},
		{"POST", "/api/admin/coupons", mt, coupon},
		{"PUT", fmt.Sprintf("/api/admin/coupons/%d", cp.ID), mt, map[string]any{"grab_start_at": at(time.Hour), "grab_end_at": at(3 * time.Hour)}},
		{"POST", "/api/admin/redpackets", mt, map[string]any{"title": "Lucky", "total_cents": 1000, "count": 10, "mode": "random", "expires_in": "1h"}},
		{"POST", fmt.Sprintf("/api/admin/goods/%d/queue/codes", queued.Goods.ID), mt, map[string]any{"count": 1, "note": "press"}},
		{"POST", fmt.Sprintf("/api/admin/orders/%d/refund", o.ID), mt, map[string]any{"reason": "broken"}},
	} {
		before, sw := a.inputSnapshot(mt, ut, live.ID, upcoming.ID), a.switches(admin)
		audited := a.auditLog(admin, "?limit=1")
		a.wantInvalid(t, w.method, w.path, w.token, plus(w.body, "colour", "red"), "colour")
		if after := a.inputSnapshot(mt, ut, live.ID, upcoming.ID); !maps.Equal(before, after) {
			t.Errorf("%s %s with an unknown field changed the lists", w.method, w.path)
		}
		if got := a.switches(admin); got != sw {
			t.Errorf("%s %s with an unknown field changed the switches: %+v, were %+v", w.method, w.path, got, sw)
		}
		if got := a.auditLog(admin, "?limit=1"); len(got) != len(audited) || (len(got) > 0 && got[0].ID != audited[0].ID) {
			t.Errorf("%s %s with an unknown field was audited: %+v", w.method, w.path, got)
		}
		if st := a.call(w.method, w.path, w.token, w.body, nil); st/100 != 2 {
			t.Errorf("%s %s %v without the unknown field: %d, want it taken", w.method, w.path, w.body, st)
		}
	}
	if got := a.order(ut, o.ID); got.Status != "refunded" {
		t.Errorf("the refund without the unknown field left the order %s", got.Status)
	}
	// A shopper's write is as lenient as before: an old client's extra field is ignored.
	if st := a.call("PUT", "/api/me/settings", ut, map[string]any{"email": "", "colour": "red"}, nil); st != 200 {
		t.Errorf("a shopper's settings with an extra field: %d, want 200", st)
	}
}

// A time that is not one (a month 13, a number) names its field on every
// goods, slot and coupon body, create and update, as does a red packet's
// duration that is not one, and changes nothing.
func TestBadTimeNamesItsField(t *testing.T) {
	a := startApp(t)
	mt, _ := a.newMerchant()
	ut, _ := a.newUser()
	now := a.Clock.Now().UTC()
	at := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	upcoming := a.createSlot(mt, 2*time.Hour, time.Hour)
	g := a.createGoods(mt, upcoming.ID, 5, 1)
	cp := a.couponCreate(mt, "Five off", 10, 1, now.Add(2*time.Hour), now.Add(3*time.Hour))
	raffle := map[string]any{"slot_id": upcoming.ID, "title": "Draw", "price_cents": 3000, "seckill_price_cents": 1000,
		"stock": 2, "limit_per_user": 1, "mode": "raffle", "entry_start_at": at(time.Hour)}
	coupon := map[string]any{"title": "Ten off", "kind": "amount_off", "value": 1000, "stock": 5, "limit_per_user": 1,
		"grab_start_at": at(time.Hour), "grab_end_at": at(2 * time.Hour)}
	window := map[string]any{"grab_start_at": at(time.Hour), "grab_end_at": at(3 * time.Hour)}
	slot := map[string]any{"title": "Evening", "start_at": at(3 * time.Hour), "end_at": at(4 * time.Hour)}
	before := a.inputSnapshot(mt, ut, upcoming.ID)
	for _, bad := range []any{"2030-13-01T00:00:00Z", "2030-01-01 10:00", "", 1893456000, true} {
		for _, w := range []struct {
			method, path string
			body         map[string]any
			field        string
		}{
			{"POST", "/api/admin/goods", raffle, "entry_start_at"},
			{"PUT", fmt.Sprintf("/api/admin/goods/%d", g.ID), raffle, "entry_start_at"},
			{"POST", "/api/admin/coupons", coupon, "grab_start_at"},
			{"POST", "/api/admin/coupons", coupon, "grab_end_at"},
			{"PUT", fmt.Sprintf("/api/admin/coupons/%d", cp.ID), window, "grab_start_at"},
			{"PUT", fmt.Sprintf("/api/admin/coupons/%d", cp.ID), window, "grab_end_at"},
			{"POST", "/api/admin/slots", slot, "start_at"},
			{"PUT", fmt.Sprintf("/api/admin/slots/%d", upcoming.ID), slot, "end_at"},
		} {
			a.wantInvalid(t, w.method, w.path, mt, plus(w.body, w.field, bad), w.field)
		}
	}
	packet := map[string]any{"title": "Lucky", "total_cents": 1000, "count": 10, "mode": "random"}
	for _, bad := range []any{"forever", "", "-1h", 3600, true} {
		a.wantInvalid(t, "POST", "/api/admin/redpackets", mt, plus(packet, "expires_in", bad), "expires_in")
	}
	if after := a.inputSnapshot(mt, ut, upcoming.ID); !maps.Equal(before, after) {
		t.Errorf("bad times changed the lists:\n%v\nwere\n%v", after, before)
	}
}

// A waiting room's join with a code that cannot be one (empty, blank) is
// 400 invalid naming code, and joins nobody.
func TestQueueJoinEmptyCode(t *testing.T) {
	a := startApp(t)
	_, g := a.queueGoods(5, 10, time.Hour, nil)
	ut, _ := a.newUser()
	path := fmt.Sprintf("/api/goods/%d/queue", g.ID)
	for _, code := range []string{"", "   ", "\t"} {
		a.wantInvalid(t, "POST", path, ut, map[string]any{"code": code}, "code")
	}
	a.wantInvalid(t, "POST", path, ut, map[string]any{"code": 7}, "code")
	if st, code, _ := a.queueRequest("GET", ut, g.ID, ""); st == 200 {
		t.Errorf("after refused codes the shopper holds a ticket: %d %s", st, code)
	}
}
