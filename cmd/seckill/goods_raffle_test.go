package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

type raffleEntryJSON struct {
	GoodsID  int64  `json:"goods_id"`
	State    string `json:"state"`
	Position int64  `json:"position"`
	OrderID  int64  `json:"order_id"`
}

type raffleDrawJSON struct {
	SeedHash string  `json:"seed_hash"`
	Seed     string  `json:"seed"`
	Entries  int64   `json:"entries"`
	Winners  *int64  `json:"winners"`
	Order    []int64 `json:"order"`
	Passed   int64   `json:"passed"`
}

// raffleGoods has a new merchant create raffle goods of stock whose sale
// starts at start (from now); entries open at creation, or at entries
// (from now) when given.
func (a *testApp) raffleGoods(stock int64, start time.Duration, entries ...time.Duration) (merchantToken string, g goodsJSON) {
	a.T.Helper()
	mt, _ := a.newMerchant()
	sl := a.createSlot(mt, start, time.Hour)
	body := map[string]any{"slot_id": sl.ID, "title": "Raffle " + fmt.Sprint(userSeq.Add(1)), "description": "limited",
		"price_cents": 20000, "seckill_price_cents": 9900, "stock": stock, "limit_per_user": 1, "mode": "raffle"}
	if len(entries) > 0 {
		body["entry_start_at"] = a.Clock.Now().Add(entries[0]).UTC().Format(time.RFC3339Nano)
	}
	var out struct{ Goods goodsJSON }
	if st := a.call("POST", "/api/admin/goods", mt, body, &out); st != 201 {
		a.T.Fatalf("create raffle goods: %d", st)
	}
	return mt, out.Goods
}

func (a *testApp) enterRaffle(token string, goodsID int64, status int) raffleEntryJSON {
	a.T.Helper()
	var out struct{ Entry raffleEntryJSON }
	if st := a.call("POST", fmt.Sprintf("/api/goods/%d/entries", goodsID), token, nil, &out); st != status {
		a.T.Fatalf("enter raffle %d: %d, want %d", goodsID, st, status)
	}
	return out.Entry
}

func (a *testApp) raffleEntry(token string, goodsID int64) raffleEntryJSON {
	a.T.Helper()
	var out struct{ Entry raffleEntryJSON }
	if st := a.call("GET", fmt.Sprintf("/api/goods/%d/entries/me", goodsID), token, nil, &out); st != 200 {
		a.T.Fatalf("my entry in raffle %d: %d", goodsID, st)
	}
	return out.Entry
}

func (a *testApp) raffleDraw(goodsID int64) raffleDrawJSON {
	a.T.Helper()
	var d raffleDrawJSON
	if st := a.call("GET", fmt.Sprintf("/api/goods/%d/draw", goodsID), "", nil, &d); st != 200 {
		a.T.Fatalf("draw of raffle %d: %d", goodsID, st)
	}
	return d
}

// A raffle over HTTP: entries in the window (once each, with a grab
// refused not_drawn), the seed's hash published before; the worker's sweep
// draws at the start; the winners hear of their orders over the WebSocket,
// find them in their orders and inbox; a cancelled one passes to the next
// entry, who hears of it live too; the merchant's view counts it all.
func TestRaffleOverHTTP(t *testing.T) {
	a := startApp(t)
	mt, g := a.raffleGoods(2, 10*time.Minute)
	type shopper struct {
		token string
		id    int64
		ws    *wsClient
	}
	var shoppers []shopper
	byID := map[int64]shopper{}
	for range 3 {
		tok, id := a.newUser()
		s := shopper{tok, id, a.dialWS(tok)}
		shoppers = append(shoppers, s)
		byID[id] = s
	}
	before := a.raffleDraw(g.ID)
	if len(before.SeedHash) != 64 || before.Seed != "" || before.Entries != 0 {
		t.Fatalf("draw before any entry: %+v", before)
	}
	for _, s := range shoppers {
		if e := a.enterRaffle(s.token, g.ID, 201); e.State != "entered" || e.GoodsID != g.ID {
			t.Fatalf("entry %+v", e)
		}
	}
	if e := a.enterRaffle(shoppers[0].token, g.ID, 200); e.State != "entered" {
		t.Fatalf("entering again: %+v", e)
	}
	a.wantError("POST", fmt.Sprintf("/api/goods/%d/grab", g.ID), shoppers[0].token, nil, 409, "not_drawn")
	a.wantError("POST", fmt.Sprintf("/api/goods/%d/entries", g.ID), "", nil, 401, "unauthorized")
	late, _ := a.newUser()
	a.wantError("GET", fmt.Sprintf("/api/goods/%d/entries/me", g.ID), late, nil, 404, "not_found")
	if d := a.raffleDraw(g.ID); d.SeedHash != before.SeedHash || d.Entries != 3 {
		t.Fatalf("draw after 3 entries: %+v", d)
	}

	a.advance(10 * time.Minute)
	a.wantError("POST", fmt.Sprintf("/api/goods/%d/entries", g.ID), late, nil, 409, "ended")
	var d raffleDrawJSON
	eventually(t, 20*time.Second, "the worker's sweep draws the raffle", func() bool {
		d = a.raffleDraw(g.ID)
		return d.Seed != ""
	})
	if d.SeedHash != before.SeedHash || d.Winners == nil || *d.Winners != 2 || len(d.Order) != 3 {
		t.Fatalf("draw %+v", d)
	}
	t.Setenv("RAFFLE_BEACON_URL", "") // no beacon: the draw names none
	var verified strings.Builder
	if err := runVerifyDraw(context.Background(), []string{a.URL, fmt.Sprint(g.ID)}, &verified); err != nil || !strings.Contains(verified.String(), "draw verified") {
		t.Fatalf("verify-draw: %v\n%s", err, verified.String())
	}
	winners, next := d.Order[:2], byID[d.Order[2]]
	for i, id := range winners {
		s := byID[id]
		var e raffleEntryJSON
		eventually(t, 10*time.Second, "the winner's order is made", func() bool {
			e = a.raffleEntry(s.token, g.ID)
			return e.OrderID != 0
		})
		if e.State != "won" || e.Position != int64(i+1) {
			t.Fatalf("winner %d's entry %+v", i, e)
		}
		ev := s.ws.next(t, 10*time.Second, "the winner's order event", func(ev map[string]any) bool {
			o, _ := ev["order"].(map[string]any)
			return ev["type"] == "order" && num(o["id"]) == e.OrderID
		})
		if o := ev["order"].(map[string]any); o["status"] != "unpaid" {
			t.Fatalf("order event %v", ev)
		}
		if o := a.order(s.token, e.OrderID); o.Status != "unpaid" || o.GoodsID != g.ID {
			t.Fatalf("winner's order %+v", o)
		}
		var notes struct {
			Notifications []struct{ Kind, Message string }
		}
		a.call("GET", "/api/me/notifications", s.token, nil, &notes)
		if len(notes.Notifications) != 1 || notes.Notifications[0].Kind != "raffle_won" || !strings.Contains(notes.Notifications[0].Message, "You won") {
			t.Fatalf("winner's inbox %+v", notes)
		}
	}
	if e := a.raffleEntry(next.token, g.ID); e.State != "waitlisted" || e.Position != 3 {
		t.Fatalf("the third entry %+v, want waitlisted at 3", e)
	}

	// The first winner cancels: the unit passes to the third.
	first := byID[winners[0]]
	var cancelled struct{ Order orderJSON }
	if st := a.call("POST", fmt.Sprintf("/api/orders/%d/cancel", a.raffleEntry(first.token, g.ID).OrderID), first.token, nil, &cancelled); st != 200 {
		t.Fatalf("cancel: %d", st)
	}
	if err := a.Fair.SweepRaffles(context.Background()); err != nil { // as the worker's next sweep does
		t.Fatal(err)
	}
	ev := next.ws.next(t, 10*time.Second, "the passed-on order event", func(ev map[string]any) bool { return ev["type"] == "order" })
	o := ev["order"].(map[string]any)
	// The worker's own sweep may be the one passing it on, its order told
	// before the entry records it: the entry is waited for, not raced.
	var e raffleEntryJSON
	eventually(t, time.Minute, "the third's entry to hold the passed-on order", func() bool {
		e = a.raffleEntry(next.token, g.ID)
		return e.State == "won" && e.OrderID == num(o["id"])
	})
	if o["status"] != "unpaid" {
		t.Fatalf("the third after a unit passed on: entry %+v, event %v", e, ev)
	}
	if e := a.raffleEntry(first.token, g.ID); e.State != "lost" {
		t.Fatalf("the canceller's entry %+v", e)
	}
	next.ws.next(t, 10*time.Second, "the passed-on entry event", func(ev map[string]any) bool {
		e, _ := ev["entry"].(map[string]any)
		return ev["type"] == "entry" && e["state"] == "won"
	})
	var mine struct{ Orders []orderJSON }
	a.call("GET", "/api/me/orders", next.token, nil, &mine)
	if len(mine.Orders) != 1 || mine.Orders[0].ID != num(o["id"]) {
		t.Fatalf("the third's orders %+v", mine.Orders)
	}
	var view struct {
		Raffle struct {
			Won, Lost, Waitlisted, Paid int64
			Draw                        raffleDrawJSON
		}
	}
	if st := a.call("GET", fmt.Sprintf("/api/admin/goods/%d/raffle", g.ID), mt, nil, &view); st != 200 {
		t.Fatalf("merchant's view: %d", st)
	}
	if r := view.Raffle; r.Won != 2 || r.Lost != 1 || r.Waitlisted != 0 || r.Draw.Passed != 1 || r.Draw.Entries != 3 {
		t.Fatalf("merchant's view %+v", r)
	}
	other, _ := a.newMerchant()
	a.wantError("GET", fmt.Sprintf("/api/admin/goods/%d/raffle", g.ID), other, nil, 404, "not_found")
}

// Entries before the entry window are refused not_started; raffle calls on
// goods sold first come are conflict.
func TestRaffleEntryWindowOverHTTP(t *testing.T) {
	a := startApp(t)
	_, g := a.raffleGoods(1, 20*time.Minute, 10*time.Minute)
	shopper, _ := a.newUser()
	a.wantError("POST", fmt.Sprintf("/api/goods/%d/entries", g.ID), shopper, nil, 409, "not_started")
	a.advance(10 * time.Minute)
	a.enterRaffle(shopper, g.ID, 201)
	_, plain := a.liveGoods(5, 1)
	a.wantError("POST", fmt.Sprintf("/api/goods/%d/entries", plain.ID), shopper, nil, 409, "conflict")
	a.wantError("GET", fmt.Sprintf("/api/goods/%d/draw", plain.ID), "", nil, 409, "conflict")
	a.wantError("GET", "/api/goods/999999/draw", "", nil, 404, "not_found")
}
