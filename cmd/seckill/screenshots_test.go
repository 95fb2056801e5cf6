package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/seckill/seckill/db/demo"
)

// TestScreenshots saves PNGs of the main pages of the demo, at the desktop
// and the phone size, into the folder SCREENSHOTS names:
//
//	SCREENSHOTS=docs/screenshots go test -run TestScreenshots ./cmd/seckill
//
// (a path relative to the repository). Skipped when SCREENSHOTS is unset.
func TestScreenshots(t *testing.T) {
	dir := os.Getenv("SCREENSHOTS")
	if dir == "" {
		t.Skip("set SCREENSHOTS=docs/screenshots to save screenshots of the main pages")
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join("..", "..", dir) // go test runs in cmd/seckill
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	a := startApp(t, func(c *Config) { c.Demo = true })
	shopper := a.login(demo.Shopper, demo.ShopperPassword)
	var slots struct{ Slots []slotJSON }
	a.call("GET", "/api/slots", "", nil, &slots)
	if len(slots.Slots) == 0 {
		t.Fatal("the demo has no slots")
	}
	var goods struct{ Goods []goodsJSON }
	a.call("GET", fmt.Sprintf("/api/slots/%d/goods", slots.Slots[0].ID), "", nil, &goods)
	if len(goods.Goods) < 2 {
		t.Fatal("the demo's live slot has too few goods")
	}
	g := goods.Goods[1] // the keyboard: a limit of 2, so the page still offers Grab after one
	paid := a.grab(shopper, g.ID)
	first := a.grab(shopper, goods.Goods[0].ID)
	// Coupons to pay it with: every live demo coupon the shopper can take.
	var coupons struct{ Coupons []couponJSON }
	a.call("GET", "/api/coupons", "", nil, &coupons)
	for _, c := range coupons.Coupons {
		a.call("POST", fmt.Sprintf("/api/coupons/%d/grab", c.ID), shopper, nil, nil)
	}
	var rps struct{ Redpackets []rpJSON }
	a.call("GET", "/api/redpackets", "", nil, &rps)
	if len(rps.Redpackets) == 0 {
		t.Fatal("the demo has no red packets")
	}
	// A receipt to show, and a red packet opened for the wallet.
	if st := a.call("POST", fmt.Sprintf("/api/orders/%d/pay", paid.ID), shopper, nil, nil); st != 200 {
		t.Fatalf("pay order %d: %d", paid.ID, st)
	}
	a.call("POST", fmt.Sprintf("/api/redpackets/%d/grab", rps.Redpackets[0].ID), shopper, nil, nil)
	if err := a.FlushAll(context.Background()); err != nil {
		t.Fatal(err)
	}

	shots := []struct{ name, user, path, wait string }{
		{"home", demo.Shopper, "/", `[data-testid=home-sections]`},
		{"slot", demo.Shopper, fmt.Sprintf("/slots/%d", slots.Slots[0].ID), `[data-testid=slot-goods][data-subscribed=on]`},
		{"goods", demo.Shopper, fmt.Sprintf("/goods/%d", g.ID), `[data-testid=goods-page][data-subscribed=on]`},
		{"my-orders", demo.Shopper, "/me/orders", `[data-testid=orders-table]`},
		{"checkout", demo.Shopper, fmt.Sprintf("/orders/%d/checkout", first.ID), `[data-testid=checkout-form]`},
		{"coupons", demo.Shopper, "/coupons", `[data-testid=coupon-list]`},
		{"redpacket", demo.Shopper, fmt.Sprintf("/redpackets/%d", rps.Redpackets[0].ID), `[data-testid=redpacket]`},
		{"admin-dashboard", demo.Merchant, "/admin", `[data-testid=admin-dashboard]`},
		{"receipt", demo.Shopper, fmt.Sprintf("/orders/%d/receipt", paid.ID), `[data-testid=receipt-page]`},
		{"wallet", demo.Shopper, "/me/wallet", `[data-testid=wallet]`},
		{"admin-goods", demo.Merchant, fmt.Sprintf("/admin/slots/%d", slots.Slots[0].ID), `[data-testid=sales-table]`},
		{"admin-goods-edit", demo.Merchant, fmt.Sprintf("/admin/goods/%d", g.ID), `[data-testid=goods-fair]`},
		{"desk", demo.Merchant, "/admin/orders", `[data-testid=desk-orders]`},
		{"desk-order", demo.Merchant, fmt.Sprintf("/admin/orders/%d", paid.ID), `[data-testid=order-history]`},
		{"desk-refund", demo.Merchant, fmt.Sprintf("/admin/orders/%d/refund", paid.ID), `[data-testid=refund-form]`},
	}
	// The fair sales and the pages the last round of fixes changed.
	_, queued := a.queueGoods(10, 5, time.Hour, nil)
	_, raffled := a.raffleGoods(3, time.Hour)
	a.joinQueue(shopper, queued.ID, "")
	shots = append(shots, []struct{ name, user, path, wait string }{
		{"queue", demo.Shopper, fmt.Sprintf("/goods/%d/queue", queued.ID), `main`},
		{"raffle", demo.Shopper, fmt.Sprintf("/goods/%d/raffle", raffled.ID), `main`},
		{"my-reminders", demo.Shopper, "/me/reminders", `main`},
		{"audit", demo.Merchant, "/admin/audit", `main`},
	}...)
	passwords := map[string]string{demo.Shopper: demo.ShopperPassword, demo.Merchant: demo.MerchantPassword}
	// Each page in English (name-size.png) and in Chinese (name-size.zh-CN.png).
	for _, lang := range []string{"en", "zh-CN"} {
		for _, v := range shopperViewports {
			ctx := newBrowser(t)
			browse(t, ctx, "zone, language and size", chromedp.ActionFunc(func(ctx context.Context) error {
				if err := network.SetExtraHTTPHeaders(network.Headers{"Accept-Language": lang}).Do(ctx); err != nil {
					return err
				}
				return emulation.SetTimezoneOverride("Asia/Shanghai").Do(ctx)
			}), v.sized())
			who := ""
			for _, s := range shots {
				if s.user != who {
					if who != "" {
						browse(t, ctx, "log out", chromedp.Click(`[data-testid=logout]`), chromedp.WaitVisible(`[data-testid=nav-login]`))
					}
					browse(t, ctx, "log in as "+s.user, browserLogin(ctx, a.URL, s.user, passwords[s.user]))
					who = s.user
				}
				var png []byte
				browse(t, ctx, s.name,
					chromedp.Navigate(a.URL+s.path),
					chromedp.WaitVisible(s.wait),
					chromedp.Poll(`document.fonts.status === "loaded"`, nil),
					chromedp.FullScreenshot(&png, 100),
				)
				file := filepath.Join(dir, s.name+"-"+v.name+".png")
				if lang != "en" {
					file = filepath.Join(dir, s.name+"-"+v.name+"."+lang+".png")
				}
				if err := os.WriteFile(file, png, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("saved %s (%d bytes)", file, len(png))
			}
		}
	}
}
