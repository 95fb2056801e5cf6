package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// A shopper watching a raffle's goods page through its start sees the
// units left after the draw go on sale without reloading it themselves:
// three units, two entries; at the draw the page turns from "See the
// draw" to "1 left after the draw" with a working Grab button, and the
// line counts down live when someone takes the unit.
func TestRaffleLeftoversShownLive(t *testing.T) {
	a := startApp(t)
	_, g := a.raffleGoods(3, 10*time.Minute)
	for range 2 {
		tok, _ := a.newUser()
		a.enterRaffle(tok, g.ID, 201)
	}
	name, _ := a.register("watcher")
	ctx := newBrowser(t)
	a.followClock(ctx)
	raffleSteps(t, ctx, "log in and open the goods page before the start", browserLogin(ctx, a.URL, name, "password123"),
		chromedp.Navigate(fmt.Sprintf("%s/goods/%d", a.URL, g.ID)),
		chromedp.WaitVisible(`[data-testid=goods-page][data-subscribed=on]`),
		chromedp.WaitVisible(`[data-testid=raffle-link]`),
	)
	a.advance(10 * time.Minute)
	if _, err := a.Fair.DrawRaffle(context.Background(), g.ID); err != nil {
		t.Fatal(err)
	}
	raffleSteps(t, ctx, "the page turns to the leftovers by itself",
		chromedp.WaitVisible(`[data-testid=raffle-leftovers]`),
		chromedp.WaitEnabled(`[data-testid=grab-button]`),
	)
	until(t, ctx, "the leftovers line", pageSays("1 left after the draw: first come, first served"))
	// Another shopper takes the unit left: the line counts down with the stock bar.
	other, _ := a.newUser()
	a.grab(other, g.ID)
	until(t, ctx, "the leftovers line follows the stock", pageSays("0 left after the draw: first come, first served"))
}
