package main

import (
	"fmt"
	"testing"
	"time"
)

// A merchant splits a hot item's stock into three Redis buckets over the
// API (1–8; anything else is refused, nothing changed); shoppers grab it as
// any goods, pay and cancel their orders, and a watcher's stock events
// carry the whole item's remaining stock, never moving back.
func TestGoodsShardsHTTP(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	mt, _ := a.newMerchant()
	sl := a.createSlot(mt, -time.Minute, time.Hour)
	body := map[string]any{"slot_id": sl.ID, "title": "Hot phone", "description": "hot",
		"price_cents": 10000, "seckill_price_cents": 2500, "stock": 30, "limit_per_user": 1, "shards": 9}
	if st := a.call("POST", "/api/admin/goods", mt, body, nil); st != 400 {
		t.Fatalf("9 shards: %d, want 400", st)
	}
	var out struct{ Goods goodsJSON }
	body["shards"] = 3
	if st := a.call("POST", "/api/admin/goods", mt, body, &out); st != 201 || out.Goods.Shards != 3 || out.Goods.Remaining != 30 {
		t.Fatalf("create with 3 shards: %d %+v", st, out.Goods)
	}
	g := out.Goods
	ut, _ := a.newUser()
	ws := a.dialWS(ut)
	topic := fmt.Sprintf("goods:%d", g.ID)
	if err := ws.conn.WriteJSON(map[string]string{"op": "subscribe", "topic": topic}); err != nil {
		t.Fatal(err)
	}
	ws.next(t, 2*time.Second, "subscribed", func(ev map[string]any) bool { return ev["type"] == "subscribed" && ev["topic"] == topic })
	var orders []orderJSON
	var tokens []string
	for range 9 {
		tok, _ := a.newUser()
		orders, tokens = append(orders, a.grab(tok, g.ID)), append(tokens, tok)
	}
	if st := a.call("POST", fmt.Sprintf("/api/orders/%d/pay", orders[0].ID), tokens[0], nil, nil); st != 200 {
		t.Fatalf("pay: %d", st)
	}
	if st := a.call("POST", fmt.Sprintf("/api/orders/%d/cancel", orders[1].ID), tokens[1], nil, nil); st != 200 {
		t.Fatalf("cancel: %d", st)
	}
	last := int64(0)
	ws.next(t, 3*time.Second, "the item's stock at 22", func(ev map[string]any) bool {
		if ev["type"] != "stock" || num(ev["goods_id"]) != g.ID {
			return false
		}
		if v := num(ev["version"]); v <= last {
			t.Fatalf("stock event %v after version %d", ev, last)
		}
		last = num(ev["version"])
		if r := num(ev["remaining"]); r < 21 || r > 29 {
			t.Fatalf("stock event %v: not the whole item's stock", ev)
		}
		return num(ev["remaining"]) == 22
	})
	var got struct{ Goods goodsJSON }
	if st := a.call("GET", fmt.Sprintf("/api/goods/%d", g.ID), ut, nil, &got); st != 200 || got.Goods.Remaining != 22 || got.Goods.Shards != 3 {
		t.Fatalf("goods after 9 grabs, a cancel: %d %+v", st, got.Goods)
	}
}
