package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The front page sells: a live item and an upcoming one with prices, stock
// bars and countdowns; another shopper's grab moves the live item's stock
// without a reload, the countdown runs with the clock, the upcoming item
// turns "On sale" at its start, and the red packets and coupons on now are
// listed with links.
func TestFrontPageBrowserLive(t *testing.T) {
	a := startApp(t)
	mt, _ := a.newMerchant()
	live := a.createSlot(mt, -time.Minute, time.Hour)
	g := a.createGoods(mt, live.ID, 5, 1)
	const startsIn = 10 * time.Minute
	next := a.createSlot(mt, startsIn, time.Hour)
	soon := a.createGoods(mt, next.ID, 3, 1)
	rp := a.createRedPacket(mt, map[string]any{"title": "Front packet", "total_cents": 500, "count": 5, "mode": "random"})
	now := a.Clock.Now()
	cp := a.couponCreate(mt, "Front coupon", 10, 1, now.Add(-time.Minute), now.Add(time.Hour))

	ctx := newBrowser(t)
	a.followClock(ctx)
	browse(t, ctx, "open the front page",
		chromedp.Navigate(a.URL+"/"),
		chromedp.WaitVisible(fmt.Sprintf(`[data-testid=home-slot-%d][data-subscribed=on]`, live.ID)),
		chromedp.WaitVisible(fmt.Sprintf(`[data-testid=home-slot-%d][data-subscribed=on]`, next.ID)),
	)
	card := fmt.Sprintf(`[data-testid=home-goods-%d]`, g.ID)
	waitText(t, ctx, card+" .price s", "¥100.00")
	waitText(t, ctx, fmt.Sprintf(`%s [data-testid=remaining-%d]`, card, g.ID), "5")
	waitText(t, ctx, fmt.Sprintf(`[data-testid=home-state-%d]`, g.ID), "On sale")
	waitText(t, ctx, fmt.Sprintf(`[data-testid=home-state-%d]`, soon.ID), "Upcoming")
	var price string
	browse(t, ctx, "read the price", chromedp.Evaluate(fmt.Sprintf(`document.querySelector("%s .price").firstChild.textContent`, card), &price))
	if price != "¥25.00" {
		t.Fatalf("seckill price %q, want ¥25.00", price)
	}

	// The countdown runs with the clock.
	countdown := fmt.Sprintf(`document.querySelector("[data-testid=home-sale-state-%d] .countdown")?.textContent ?? ""`, g.ID)
	var before string
	browse(t, ctx, "read the countdown", chromedp.Evaluate(countdown, &before))
	if before == "" {
		t.Fatal("the live item shows no countdown")
	}
	a.advance(5 * time.Minute)
	until(t, ctx, "the countdown moves", fmt.Sprintf(`(%s) !== "" && (%s) !== %q`, countdown, countdown, before))

	// Another shopper grabs: the stock number and bar move without a reload.
	other, _ := a.newUser()
	a.grab(other, g.ID)
	waitText(t, ctx, fmt.Sprintf(`%s [data-testid=remaining-%d]`, card, g.ID), "4")
	until(t, ctx, "the stock bar moves", fmt.Sprintf(`document.querySelector("%s [data-bar]").style.width === "80%%"`, card))

	// The upcoming item opens at its start, without a reload.
	a.advance(startsIn)
	waitText(t, ctx, fmt.Sprintf(`[data-testid=home-state-%d]`, soon.ID), "On sale")

	// Red packets and coupons on now, each with its link.
	var rpHref, cpHref string
	browse(t, ctx, "read the links",
		chromedp.AttributeValue(fmt.Sprintf(`[data-testid=home-rp-%d] a`, rp.ID), "href", &rpHref, nil),
		chromedp.AttributeValue(fmt.Sprintf(`[data-testid=home-coupon-%d] a`, cp.ID), "href", &cpHref, nil),
	)
	if rpHref != fmt.Sprintf("/redpackets/%d", rp.ID) || cpHref != fmt.Sprintf("/coupons#coupon-%d", cp.ID) {
		t.Fatalf("links %q and %q", rpHref, cpHref)
	}
	other2, _ := a.newUser()
	a.grabRedPacket(other2, rp.ID)
	waitText(t, ctx, fmt.Sprintf(`[data-testid=home-rp-%d] [data-rp-remaining]`, rp.ID), "4")
}
