package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// A shopper walks through a raffle in the browser: from the goods page's
// "Enter the raffle" to the raffle page, enters (solving its proof of work),
// sees the published seed hash, and after the start the draw's proof (the
// seed, whose SHA-256 is the hash shown before, and the order) and their
// result: won with the order to pay, or waitlisted until the winner cancels
// and the unit passes to them. The merchant's live view counts it all.
func TestRaffleBrowser(t *testing.T) {
	a := startApp(t)
	mt, g := a.raffleGoods(1, 10*time.Minute)
	rival, _ := a.newUser()
	a.enterRaffle(rival, g.ID, 201) // before the proof of work is asked
	if st := a.call("PUT", fmt.Sprintf("/api/admin/goods/%d", g.ID), mt, map[string]any{"title": g.Title, "description": g.Description,
		"price_cents": 20000, "seckill_price_cents": 9900, "stock": 1, "limit_per_user": 1, "mode": "raffle", "pow_bits": 8}, nil); st != 200 {
		t.Fatalf("ask a proof of work: %d", st)
	}
	name, token := a.register("rafflebrowser")
	ctx := newBrowser(t)
	a.followClock(ctx)
	raffleSteps(t, ctx, "log in", browserLogin(ctx, a.URL, name, "password123"))

	var seedHash string
	raffleSteps(t, ctx, "enter the raffle from the goods page",
		chromedp.Navigate(fmt.Sprintf("%s/goods/%d", a.URL, g.ID)),
		chromedp.WaitVisible(`[data-testid=raffle-link]`),
		chromedp.Click(`[data-testid=raffle-link]`),
		chromedp.WaitVisible(`[data-testid=raffle-page]`),
		chromedp.WaitVisible(`[data-testid=pow-note]`),
		chromedp.TextContent(`[data-testid=seed-hash]`, &seedHash, chromedp.ByQuery),
		chromedp.WaitEnabled(`[data-testid=raffle-enter]`),
		chromedp.Click(`[data-testid=raffle-enter]`),
		chromedp.WaitVisible(`[data-raffle][data-entry-state=entered]`),
		chromedp.WaitNotVisible(`[data-testid=raffle-enter]`),
	)
	waitText(t, ctx, `[data-testid=raffle-entries]`, "2")
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(strings.TrimSpace(seedHash)) {
		t.Fatalf("seed hash shown %q", seedHash)
	}
	if e := a.raffleEntry(token, g.ID); e.State != "entered" {
		t.Fatalf("the browser's entry %+v", e)
	}

	a.advance(10 * time.Minute)
	if _, err := a.Fair.DrawRaffle(context.Background(), g.ID); err != nil {
		t.Fatal(err)
	}
	d := a.raffleDraw(g.ID)
	var seed string
	// The count shows; the proof waits behind "How the draw is kept fair".
	var proofShown bool
	raffleSteps(t, ctx, "the draw, its proof folded away",
		chromedp.WaitVisible(`[data-testid=raffle-proof]`),
		chromedp.Evaluate(`document.querySelector("[data-testid=raffle-order]").checkVisibility()`, &proofShown))
	if proofShown {
		t.Fatal("the draw's order shows before the shopper asks for the proof")
	}
	raffleSteps(t, ctx, "the draw's proof",
		chromedp.Click(`[data-testid=raffle-fairness-open]`),
		chromedp.WaitVisible(`[data-testid=raffle-order] li:nth-child(2)`),
		chromedp.Text(`[data-testid=raffle-seed]`, &seed),
		chromedp.WaitVisible(`[data-testid=raffle-check]`),
	)
	if strings.TrimSpace(seed) != d.Seed || d.SeedHash != strings.TrimSpace(seedHash) {
		t.Fatalf("the page shows seed %q, the draw has %q (hash %s, shown before %s)", seed, d.Seed, d.SeedHash, seedHash)
	}
	if e := a.raffleEntry(token, g.ID); e.State == "waitlisted" {
		t.Log("the browser's shopper is waitlisted: the rival cancels and the unit passes on")
		raffleSteps(t, ctx, "waitlisted", chromedp.WaitVisible(`[data-raffle][data-entry-state=waitlisted]`))
		// The rival won and cancels: the unit passes to the browser's shopper.
		var win raffleEntryJSON
		eventually(t, 10*time.Second, "the rival's order", func() bool { win = a.raffleEntry(rival, g.ID); return win.OrderID != 0 })
		if st := a.call("POST", fmt.Sprintf("/api/orders/%d/cancel", win.OrderID), rival, nil, nil); st != 200 {
			t.Fatalf("cancel: %d", st)
		}
		if err := a.Fair.SweepRaffles(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	raffleSteps(t, ctx, "won: the order to pay",
		chromedp.WaitVisible(`[data-raffle][data-entry-state=won]`),
		chromedp.WaitVisible(`[data-testid=raffle-pay]`),
		// Clicked where it is at that moment: a live update may have drawn the status again since it was found.
		chromedp.Evaluate(`document.querySelector('[data-testid=raffle-pay]').click()`, nil),
		chromedp.WaitVisible(`[data-testid=checkout-page]`),
	)
	e := a.raffleEntry(token, g.ID)
	if o := a.order(token, e.OrderID); o.Status != "unpaid" || o.GoodsID != g.ID {
		t.Fatalf("the browser's order %+v", o)
	}
	if st := a.call("POST", fmt.Sprintf("/api/orders/%d/pay", e.OrderID), token, nil, nil); st != 200 {
		t.Fatalf("pay: %d", st)
	}
	raffleSteps(t, ctx, "paid",
		chromedp.Navigate(fmt.Sprintf("%s/goods/%d/raffle", a.URL, g.ID)),
		chromedp.WaitVisible(`[data-testid=raffle-paid]`),
	)

	// The merchant's live view of the raffle.
	mctx := newBrowser(t)
	var merchantName string
	var me struct{ User struct{ Username string } }
	a.call("GET", "/api/me", mt, nil, &me)
	merchantName = me.User.Username
	raffleSteps(t, mctx, "the merchant's view",
		browserLogin(mctx, a.URL, merchantName, "password123"),
		chromedp.Navigate(fmt.Sprintf("%s/admin/goods/%d", a.URL, g.ID)),
		chromedp.WaitVisible(`[data-testid=raffle-admin]`),
	)
	waitText(t, mctx, `[data-testid=raffle-admin-entries]`, "2")
	waitText(t, mctx, `[data-testid=raffle-admin-won]`, "1")
}

// raffleSteps runs the actions one by one, each waiting on an event (a
// step given a minute has failed, not waited too little), and on a failure
// says which step failed and what the page showed.
func raffleSteps(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action) {
	t.Helper()
	for i, act := range actions {
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := chromedp.Run(sctx, act)
		cancel()
		if err != nil {
			var html string
			hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			chromedp.Run(hctx, chromedp.OuterHTML("main", &html))
			cancel()
			t.Fatalf("%s, step %d of %d: %v\n%s", what, i+1, len(actions), err, html)
		}
	}
}
