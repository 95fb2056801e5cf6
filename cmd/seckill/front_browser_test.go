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

// The /admin dashboard moves without a reload: a grab moves the slot's sold
// count at once, and a payment with a coupon moves gross, discount and net
// (with the next second's chart sample, as a payment moves no stock).
func TestDashboardBrowserLive(t *testing.T) {
	a := startApp(t)
	mt, _ := a.newMerchant()
	sl := a.createSlot(mt, -time.Minute, time.Hour)
	g := a.goodsPriced(mt, sl.ID, 99900, 5)
	cp := a.couponTemplate(mt, "percent_off", 15, 0, 7)

	ctx := newBrowser(t)
	browse(t, ctx, "log in", browserLogin(ctx, a.URL, a.Config.AdminUsername, testAdminPassword))
	row := fmt.Sprintf(`[data-testid=dashboard-slot-%d]`, sl.ID)
	browse(t, ctx, "open the dashboard", chromedp.Navigate(a.URL+"/admin/"), chromedp.WaitVisible(row+`[data-live=on]`))
	waitText(t, ctx, row+` [data-total=sold]`, "0")

	u, _ := a.newUser()
	uc := a.grabCoupon(u, cp.ID)
	o := a.grab(u, g.ID)
	waitText(t, ctx, row+` [data-total=sold]`, "1")
	waitText(t, ctx, row+` [data-total=unpaid]`, "1")

	if st, _ := a.pay(u, o.ID, uc.ID); st != 200 {
		t.Fatalf("pay: %d", st)
	}
	a.advance(time.Second) // the next sample is a second later, whatever the wall clock does
	waitText(t, ctx, row+` [data-total=paid]`, "1")
	waitText(t, ctx, row+` [data-total=revenue_cents]`, "¥999.00")
	waitText(t, ctx, row+` [data-total=discount_cents]`, "¥149.85")
	waitText(t, ctx, row+` [data-total=net_cents]`, "¥849.15")

	// The slot's own page says the same, in its sales row and its totals.
	browse(t, ctx, "open the slot page", chromedp.Navigate(fmt.Sprintf("%s/admin/slots/%d", a.URL, sl.ID)), chromedp.WaitVisible(`[data-testid=sales-table]`))
	waitText(t, ctx, fmt.Sprintf(`[data-testid=sales-net-%d]`, g.ID), "¥849.15")
	waitText(t, ctx, `[data-testid=total-revenue]`, "¥999.00")
	waitText(t, ctx, `[data-testid=total-discount]`, "¥149.85")
	waitText(t, ctx, `[data-testid=total-net]`, "¥849.15")
}

// The goods page says its state in words and flips it with the clock,
// without a reload: "Upcoming" until the start, "On sale" at the start,
// "Ended" at the end.
func TestGoodsPageBrowserStateFlips(t *testing.T) {
	a := startApp(t)
	mt, _ := a.newMerchant()
	const startsIn = 10 * time.Minute
	sl := a.createSlot(mt, startsIn, time.Hour)
	g := a.createGoods(mt, sl.ID, 5, 1)
	ctx := newBrowser(t)
	a.followClock(ctx)
	browse(t, ctx, "open the goods page", chromedp.Navigate(fmt.Sprintf("%s/goods/%d", a.URL, g.ID)), chromedp.WaitVisible(`[data-testid=goods-page][data-subscribed=on]`))
	waitText(t, ctx, `[data-testid=goods-state]`, "Upcoming")
	a.advance(startsIn)
	waitText(t, ctx, `[data-testid=goods-state]`, "On sale")
	until(t, ctx, "the sale state line follows", saleStateStarts("On sale now"))
	a.advance(time.Hour)
	waitText(t, ctx, `[data-testid=goods-state]`, "Ended")
	until(t, ctx, "the sale state line follows", saleStateStarts("This sale has ended"))
}
