package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/seckill/seckill/db/demo"
)

// An order's history on the desk reads as events in the reader's words, at
// desktop and phone width, in English and Chinese: "Order placed" (下单),
// not the field name "Created"; the demo's shopper named once, not
// "shopper shopper"; the payment's coupon by its title with the discount
// as money, not its ID and a bare number; and no note on how the page is made.
func TestDeskHistoryReadsAsEvents(t *testing.T) {
	a := startApp(t, func(c *Config) { c.Demo = true })
	name, mt := a.namedMerchant()
	sl := a.createSlot(mt, -time.Minute, time.Hour)
	g := a.createGoods(mt, sl.ID, 20, 5)
	cp := a.couponTemplate(mt, "amount_off", 1500, 0, 7)
	shopper := a.login(demo.Shopper, demo.ShopperPassword)
	uc := a.grabCoupon(shopper, cp.ID)
	a.myCoupon(shopper, uc.ID)
	o := a.grab(shopper, g.ID)
	if st, _ := a.pay(shopper, o.ID, uc.ID); st != 200 {
		t.Fatalf("pay with the coupon: %d", st)
	}

	ctx := newBrowser(t)
	browse(t, ctx, "log in", browserLogin(ctx, a.URL, name, "password123"))
	for _, lang := range []struct{ code, placed, detail, footnote string }{
		{"en", "Order placed", "with the coupon “Deal”: ¥15.00 off", "audit log"},
		{"zh-CN", "下单", "使用优惠券“Deal”，优惠 ¥15.00", "操作日志"},
	} {
		for _, size := range []struct{ w, h int64 }{{1366, 900}, {390, 844}} {
			what := fmt.Sprintf("%s at %d", lang.code, size.w)
			raffleSteps(t, ctx, what,
				chromedp.EmulateViewport(size.w, size.h),
				chromedp.Navigate(fmt.Sprintf("%s/admin/orders/%d", a.URL, o.ID)),
				chromedp.WaitVisible(`[data-testid=order-history]`),
			)
			raffleSteps(t, ctx, what+": the switch", pickLanguage(lang.code),
				chromedp.WaitVisible(fmt.Sprintf(`html[lang=%s] [data-testid=order-history]`, lang.code)))
			var placed, actors, detail, page string
			raffleSteps(t, ctx, what+": the history",
				chromedp.Text(`[data-testid=history-created] .badge`, &placed, chromedp.ByQuery),
				chromedp.Evaluate(`[...document.querySelectorAll("[data-testid=history-actor]")].map(e => e.innerText).join("|")`, &actors),
				chromedp.Text(`[data-testid=history-paid] [data-testid=history-detail]`, &detail, chromedp.ByQuery),
				chromedp.Text(`main`, &page, chromedp.ByQuery),
			)
			if strings.TrimSpace(placed) != lang.placed {
				t.Errorf("%s: the order's first step reads %q, want %q", what, placed, lang.placed)
			}
			if strings.Contains(actors, "shopper shopper") || !strings.Contains(actors, demo.Shopper) {
				t.Errorf("%s: who made the steps: %q", what, actors)
			}
			if strings.TrimSpace(detail) != lang.detail {
				t.Errorf("%s: the payment's detail reads %q, want %q", what, detail, lang.detail)
			}
			if strings.Contains(page, lang.footnote) {
				t.Errorf("%s: the page speaks of how it is made: %q", what, page)
			}
			noWiderThanViewport(t, ctx, "the order's page "+what)
		}
	}
}

// pickLanguage clicks the page's language switch to code unless the page
// is in it already.
func pickLanguage(code string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		var shown string
		if err := chromedp.Evaluate(`document.documentElement.lang`, &shown).Do(ctx); err != nil || shown == code {
			return err
		}
		return chromedp.Click(fmt.Sprintf(`[data-testid=lang-%s]`, code), chromedp.NodeVisible).Do(ctx)
	})
}
