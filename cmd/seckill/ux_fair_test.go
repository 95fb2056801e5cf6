package main

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// A raffle's units left after its draw go on sale first come, over HTTP:
// with fewer entries than units the grab is refused not_drawn until the
// draw, then answers 201 for a unit left (limit_per_user still holds the
// winners to theirs) and 409 sold_out once none is left. With a waitlist a
// grab stays not_drawn while any entry may still be owed a unit; once the
// waitlist ran out a unit given back is sold first come too.
func TestRaffleLeftoversOnSaleOverHTTP(t *testing.T) {
	a := startApp(t)
	ctx := context.Background()
	grab := func(what, token string, goodsID int64, want int, code string) {
		t.Helper()
		st, got := a.grabHeader(token, goodsID, "X-Pow", "")
		if st != want || got != code {
			t.Fatalf("%s: %d %q, want %d %q", what, st, got, want, code)
		}
	}
	// The gate reads the raffle at most once a second: a second of the
	// injected clock passes after each change.
	draw := func(goodsID int64) {
		t.Helper()
		if _, err := a.Fair.DrawRaffle(ctx, goodsID); err != nil {
			t.Fatal(err)
		}
		a.advance(time.Second)
	}

	// Three units, two entries: one unit left after the draw.
	_, g := a.raffleGoods(3, 10*time.Minute)
	w1, _ := a.newUser()
	w2, _ := a.newUser()
	a.enterRaffle(w1, g.ID, 201)
	a.enterRaffle(w2, g.ID, 201)
	outsider, _ := a.newUser()
	grab("a grab before the start", outsider, g.ID, 409, "not_drawn")
	a.advance(10 * time.Minute)
	draw(g.ID)
	if d := a.raffleDraw(g.ID); d.Winners == nil || *d.Winners != 2 || d.Entries != 2 {
		t.Fatalf("the draw %+v", d)
	}
	for _, w := range []string{w1, w2} {
		if e := a.raffleEntry(w, g.ID); e.State != "won" || e.OrderID == 0 {
			t.Fatalf("a winner's entry %+v", e)
		}
	}
	grab("a winner grabs more", w1, g.ID, 409, "limit_reached")
	grab("a shopper grabs the unit left", outsider, g.ID, 201, "")
	another, _ := a.newUser()
	grab("none left", another, g.ID, 409, "sold_out")

	// One unit, two entries: the second is waitlisted, and owed the unit
	// should the winner not pay.
	_, h := a.raffleGoods(1, 10*time.Minute)
	first, _ := a.newUser()
	second, _ := a.newUser()
	a.enterRaffle(first, h.ID, 201)
	a.enterRaffle(second, h.ID, 201)
	a.advance(10 * time.Minute)
	draw(h.ID)
	grab("a grab while an entry is waitlisted", outsider, h.ID, 409, "not_drawn")
	d := a.raffleDraw(h.ID)
	tokens := map[int64]string{}
	for _, tok := range []string{first, second} {
		var me struct{ User struct{ ID int64 } }
		a.call("GET", "/api/me", tok, nil, &me)
		tokens[me.User.ID] = tok
	}
	winner, next := tokens[d.Order[0]], tokens[d.Order[1]]
	cancel := func(token string) {
		t.Helper()
		e := a.raffleEntry(token, h.ID)
		if st := a.call("POST", fmt.Sprintf("/api/orders/%d/cancel", e.OrderID), token, nil, nil); st != 200 {
			t.Fatalf("cancel order %d: %d", e.OrderID, st)
		}
		if err := a.Fair.SweepRaffles(ctx); err != nil {
			t.Fatal(err)
		}
		a.advance(time.Second)
	}
	cancel(winner) // the unit passes to the waitlisted entry: the draw's order is through
	if e := a.raffleEntry(next, h.ID); e.State != "won" || e.OrderID == 0 {
		t.Fatalf("the unit passed on: %+v", e)
	}
	grab("the waitlist ran out, the unit held", outsider, h.ID, 409, "sold_out")
	cancel(next) // no entry is owed it: it goes on sale
	grab("a unit given back after the waitlist ran out", outsider, h.ID, 201, "")
}
