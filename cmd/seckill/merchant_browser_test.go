package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// shoot saves the page at desktop and phone sizes as <name>-desktop.png and
// <name>-phone.png in the folder SCREENSHOTS names (unset: nothing), for the README.
func shoot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("SCREENSHOTS")
	if dir == "" {
		return
	}
	for _, size := range []struct {
		name string
		w, h int64
	}{{"desktop", 1280, 900}, {"phone", 390, 844}} {
		var png []byte
		browse(t, ctx, "screenshot "+name,
			chromedp.EmulateViewport(size.w, size.h),
			chromedp.FullScreenshot(&png, 100),
		)
		if err := os.WriteFile(filepath.Join(dir, name+"-"+size.name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	browse(t, ctx, "desktop again", chromedp.EmulateViewport(1280, 900))
}

// A merchant watches a goods' live chart while the test drives a sale
// through the API: stock left, unpaid and paid move without a reload, the
// slot's totals follow, and the form warns of a seckill price above the list
// price as it is typed.
func TestMerchantBrowserChart(t *testing.T) {
	a := startApp(t)
	name := fmt.Sprintf("merch%d", userSeq.Add(1))
	if st := a.call("POST", "/api/admin/users", a.adminToken(), map[string]string{"username": name, "password": "password123", "role": "merchant"}, nil); st != 201 {
		t.Fatalf("create merchant: %d", st)
	}
	mt := a.login(name, "password123")
	sl := a.createSlot(mt, -time.Minute, time.Hour)
	g := a.createGoods(mt, sl.ID, 10, 1)

	ctx := newBrowser(t)
	a.followClock(ctx)
	browse(t, ctx, "log in", browserLogin(ctx, a.URL, name, "password123"))
	browse(t, ctx, "open the goods page",
		chromedp.Navigate(fmt.Sprintf("%s/admin/goods/%d", a.URL, g.ID)),
		chromedp.WaitVisible(`[data-testid=goods-chart][data-loaded=on]`),
	)
	waitText(t, ctx, `[data-testid=chart-remaining]`, "10")

	var orders []orderJSON
	var tokens []string
	for range 3 {
		u, _ := a.newUser()
		tokens = append(tokens, u)
		orders = append(orders, a.grab(u, g.ID))
	}
	a.advance(time.Second) // the next sample is a second later, whatever the wall clock does
	waitText(t, ctx, `[data-testid=chart-remaining]`, "7")
	waitText(t, ctx, `[data-testid=chart-unpaid]`, "3")

	if st := a.call("POST", fmt.Sprintf("/api/orders/%d/pay", orders[0].ID), tokens[0], nil, nil); st != 200 {
		t.Fatalf("pay: %d", st)
	}
	a.advance(time.Second)
	waitText(t, ctx, `[data-testid=chart-paid]`, "1")
	waitText(t, ctx, `[data-testid=chart-unpaid]`, "2")
	var bars int
	browse(t, ctx, "read the chart", chromedp.Evaluate(`document.querySelectorAll("[data-testid=goods-chart] svg polyline").length`, &bars))
	if bars != 3 {
		t.Fatalf("chart has %d lines, want 3", bars)
	}
	// Its axes: units up to the stock, grabs a second, the time at each end.
	var axes map[string]string
	browse(t, ctx, "read the axes", chromedp.Evaluate(`Object.fromEntries(Array.from(document.querySelectorAll("[data-testid=goods-chart] [data-axis], [data-testid=goods-chart] .axis-title")).map((el) => [el.dataset.axis || el.textContent, el.textContent]))`, &axes))
	clock := regexp.MustCompile(`^\d\d:\d\d:\d\d$`)
	if axes["y-max"] != "10" || axes["y-mid"] != "5" || axes["r-max"] == "" || !clock.MatchString(axes["x-start"]) || !clock.MatchString(axes["x-end"]) ||
		axes["Units"] == "" || axes["Time"] == "" || axes["Grabs/s"] == "" {
		t.Fatalf("chart axes %v, want units 0–10, grabs a second and times labelled", axes)
	}
	shoot(t, ctx, "merchant-goods")

	// The slot's page: totals of its goods, and its own chart.
	browse(t, ctx, "open the slot page",
		chromedp.Navigate(fmt.Sprintf("%s/admin/slots/%d", a.URL, sl.ID)),
		chromedp.WaitVisible(`[data-testid=slot-chart][data-loaded=on]`),
	)
	waitText(t, ctx, `[data-testid=total-sold]`, "3")
	waitText(t, ctx, `[data-testid=total-paid]`, "1")
	waitText(t, ctx, `[data-testid=slot-chart] [data-testid=chart-remaining]`, "7")
	shoot(t, ctx, "merchant-slot")

	// A seckill price above the list price is flagged while typing.
	browse(t, ctx, "type prices",
		chromedp.SendKeys(`[data-testid=goods-form] [data-testid=input-price_cents]`, "10.00"),
		chromedp.SendKeys(`[data-testid=goods-form] [data-testid=input-seckill_price_cents]`, "12.00"),
	)
	waitText(t, ctx, `[data-testid=goods-form] [data-testid=error-seckill_price_cents]`, "must not be above the list price")

	// The dashboard lists the live slot with its totals.
	browse(t, ctx, "open the dashboard", chromedp.Navigate(a.URL+"/admin/"))
	waitText(t, ctx, fmt.Sprintf(`[data-testid=dashboard-slot-%d] [data-total=sold]`, sl.ID), "3")
	shoot(t, ctx, "merchant-dashboard")

	// A shopper's page of the goods shows the end live when the merchant ends the sale.
	browse(t, ctx, "open the shopper's page",
		chromedp.Navigate(fmt.Sprintf("%s/goods/%d", a.URL, g.ID)),
		chromedp.WaitVisible(`[data-testid=goods-page][data-subscribed=on]`),
	)
	if st := a.call("POST", fmt.Sprintf("/api/admin/goods/%d/end", g.ID), mt, nil, nil); st != 200 {
		t.Fatalf("end: %d", st)
	}
	waitText(t, ctx, `[data-testid=sale-state]`, "The sale has ended.")
	var disabled bool
	browse(t, ctx, "read the grab button", chromedp.JavascriptAttribute(`[data-testid=grab-button]`, "disabled", &disabled))
	if !disabled {
		t.Fatal("grab button enabled after the end")
	}

	// Hidden from its page, marked so for its owner.
	browse(t, ctx, "hide the goods",
		chromedp.Navigate(fmt.Sprintf("%s/admin/goods/%d", a.URL, g.ID)),
		chromedp.Click(`[data-testid=hide]`),
		chromedp.WaitVisible(`[data-testid=unhide]`),
	)
	waitText(t, ctx, `h1 [data-testid=hidden-badge]`, "Hidden")
}

// An admin creates a merchant account from the accounts page; it can log in as a merchant.
func TestAdminCreatesMerchantBrowser(t *testing.T) {
	a := startApp(t)
	ctx := newBrowser(t)
	browse(t, ctx, "log in", browserLogin(ctx, a.URL, a.Config.AdminUsername, testAdminPassword))
	name := fmt.Sprintf("shop%d", userSeq.Add(1))
	browse(t, ctx, "create a merchant",
		chromedp.Navigate(a.URL+"/admin/users"),
		chromedp.WaitVisible(`[data-testid=user-form]`),
		chromedp.SendKeys(`[data-testid=input-username]`, name),
		chromedp.SendKeys(`[data-testid=input-password]`, "x"),
		chromedp.Click(`[data-testid=user-submit]`),
		chromedp.WaitVisible(`[data-testid=error-password]`),
	)
	waitText(t, ctx, `[data-testid=error-password]`, "must be 8 to 72 characters")
	browse(t, ctx, "fix the password",
		chromedp.SendKeys(`[data-testid=input-password]`, "password123"),
		chromedp.Click(`[data-testid=user-submit]`),
		chromedp.WaitVisible(`[data-testid=user-row-`+name+`]`),
	)
	var me struct {
		User struct{ Role string }
	}
	if st := a.call("GET", "/api/me", a.login(name, "password123"), nil, &me); st != 200 || me.User.Role != "merchant" {
		t.Fatalf("new merchant: %d %+v", st, me)
	}
}
