package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// A shopper who won a raffle and let the order expire unpaid reads, on the
// raffle page, that they won and that their order expired unpaid, never
// "Not this time": in English and in Chinese, at desktop and phone width,
// as the server draws the page and as its script draws it again.
func TestRaffleWinnerWhoseOrderExpired(t *testing.T) {
	a := startApp(t)
	_, g := a.raffleGoods(1, 10*time.Minute)
	name, token := a.register("rafflelate")
	a.enterRaffle(token, g.ID, 201)
	a.advance(10 * time.Minute)
	if _, err := a.Fair.DrawRaffle(context.Background(), g.ID); err != nil {
		t.Fatal(err)
	}
	var e raffleEntryJSON
	eventually(t, 20*time.Second, "the winner's order", func() bool { e = a.raffleEntry(token, g.ID); return e.OrderID != 0 })
	o := a.order(token, e.OrderID)
	a.advance(time.Until(o.ExpiresAt) + time.Minute - a.Clock.Offset())
	eventually(t, 20*time.Second, "the order to expire", func() bool { return a.order(token, e.OrderID).Status == "expired" })
	eventually(t, 20*time.Second, "the entry to be lost", func() bool {
		if err := a.Fair.SweepRaffles(context.Background()); err != nil {
			t.Fatal(err)
		}
		return a.raffleEntry(token, g.ID).State == "lost"
	})

	// As the server draws it, before the page's script reads the entry.
	for _, want := range []struct{ lang, won, expired string }{{"en", "You won", "expired unpaid"}, {"zh-CN", "已中签", "未在时限内支付"}} {
		st, body := i18nGet(t, a, token, fmt.Sprintf("/goods/%d/raffle", g.ID), want.lang)
		i := strings.Index(body, `data-raffle-status`)
		if st != 200 || i < 0 {
			t.Fatalf("raffle page in %s: %d", want.lang, st)
		}
		status := body[i:min(len(body), i+600)]
		if !strings.Contains(status, want.won) || !strings.Contains(status, want.expired) {
			t.Errorf("the raffle page in %s as served: %s", want.lang, status)
		}
	}

	ctx := newBrowser(t)
	a.followClock(ctx)
	browse(t, ctx, "log in", browserLogin(ctx, a.URL, name, "password123"))
	number := fmt.Sprintf("#G%d-%04d", g.ID, e.OrderID%1_000_000_000)
	for _, lang := range []struct{ code, won, expired, lost string }{
		{"en", "You won", "expired unpaid", "Not this time"},
		{"zh-CN", "已中签", "未在时限内支付", "未中签"},
	} {
		for _, size := range []struct{ w, h int64 }{{1366, 900}, {390, 844}} {
			what := fmt.Sprintf("%s at %d", lang.code, size.w)
			raffleSteps(t, ctx, what,
				chromedp.EmulateViewport(size.w, size.h),
				chromedp.Navigate(fmt.Sprintf("%s/goods/%d/raffle", a.URL, g.ID)),
				chromedp.ActionFunc(func(ctx context.Context) error { // the switch, once per language
					var shown string
					if err := chromedp.Evaluate(`document.documentElement.lang`, &shown).Do(ctx); err != nil || shown == lang.code {
						return err
					}
					return chromedp.Click(fmt.Sprintf(`[data-testid=lang-%s]`, lang.code), chromedp.NodeVisible).Do(ctx)
				}),
				chromedp.WaitVisible(fmt.Sprintf(`html[lang=%s] [data-raffle][data-loaded="1"]`, lang.code)),
			)
			var text string
			raffleSteps(t, ctx, what+": the status", chromedp.Text(`[data-raffle-status]`, &text, chromedp.ByQuery))
			if !strings.Contains(text, lang.won) || !strings.Contains(text, lang.expired) || !strings.Contains(text, number) || strings.Contains(text, lang.lost) {
				t.Errorf("%s: the raffle's status reads %q; want %q, %q and %s", what, text, lang.won, lang.expired, number)
			}
			noWiderThanViewport(t, ctx, "the raffle page "+what)
		}
	}
}
