package main

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
)

// While an admin pauses the sale, an open goods page and the front page's
// card turn to "Paused" live (the Grab button held), and back to on sale
// on resume, without a reload; a page opened while paused says so at once,
// and a socket opened then is told too (the hub's first message).
func TestPausedSaleShownLive(t *testing.T) {
	forViewports(t, func(t *testing.T, v shopperViewport) {
		a := startApp(t)
		_, g := a.liveGoods(5, 1)
		admin := a.adminToken()
		pause := func(on bool) {
			t.Helper()
			if st := a.call("PUT", "/api/admin/switches", admin, map[string]bool{"sale_paused": on}, nil); st != 200 {
				t.Fatalf("sale_paused %v: %d", on, st)
			}
		}
		name, _ := a.register("paused")
		ctx := newBrowser(t)
		browse(t, ctx, "log in", v.sized(), browserLogin(ctx, a.URL, name, "password123"))
		goodsPage := fmt.Sprintf("%s/goods/%d", a.URL, g.ID)
		browse(t, ctx, "open the goods page", chromedp.Navigate(goodsPage), chromedp.WaitVisible(`[data-testid=goods-page][data-subscribed=on]`))
		until(t, ctx, "on sale", grabButtonIs("Grab for ¥25.00", true))

		pause(true)
		until(t, ctx, "paused live: the button held", grabButtonIs("Paused", false)+" && "+saleStateStarts("The sale is paused"))
		waitText(t, ctx, `[data-testid=goods-state]`, "Paused")
		pause(false)
		until(t, ctx, "resumed live", grabButtonIs("Grab for ¥25.00", true)+" && "+saleStateStarts("On sale now"))
		waitText(t, ctx, `[data-testid=goods-state]`, "On sale")

		// The front page's card, live both ways.
		browse(t, ctx, "open the front page", chromedp.Navigate(a.URL+"/"), chromedp.WaitVisible(fmt.Sprintf(`[data-testid=home-state-%d]`, g.ID)))
		card := fmt.Sprintf(`[data-testid=home-state-%d]`, g.ID)
		waitText(t, ctx, card, "On sale")
		pause(true)
		waitText(t, ctx, card, "Paused")

		// Opened while paused: paused at once, in Chinese too.
		browse(t, ctx, "reopen the goods page", chromedp.Navigate(goodsPage), chromedp.WaitVisible(`[data-testid=goods-page][data-subscribed=on]`))
		until(t, ctx, "paused on a page opened while paused", grabButtonIs("Paused", false))
		browse(t, ctx, "in Chinese", chromedp.Click(`[data-testid=lang-zh-CN]`, chromedp.ByQuery), chromedp.WaitVisible(`html[lang=zh-CN] [data-testid=goods-page][data-subscribed=on]`))
		until(t, ctx, "paused in Chinese", grabButtonIs("已暂停", false))
		pause(false)
		until(t, ctx, "resumed in Chinese", `!document.querySelector("[data-testid=grab-button]").disabled`)
	})
}

// A countdown inside a sentence is as wide as its figures: no gap opens
// between it and the punctuation after it ("02:56:05 . You hold…"), in
// either language; in a table it keeps its column's width.
func TestCountdownInASentenceLeavesNoGap(t *testing.T) {
	a := startApp(t)
	_, g := a.liveGoods(5, 1)
	name, token := a.register("gap")
	a.grab(token, g.ID) // the limit: the sale line reads "ends in <countdown>. You hold 1 of 1…"
	ctx := newBrowser(t)
	browse(t, ctx, "log in", browserLogin(ctx, a.URL, name, "password123"))
	// gapAfter is how much wider the sale line's countdown is than its figures.
	const gapAfter = `(() => { const c = document.querySelector("[data-testid=sale-state] .countdown");
  if (!c || !c.textContent.trim()) return -1;
  const r = document.createRange(); r.selectNodeContents(c);
  return c.getBoundingClientRect().width - r.getBoundingClientRect().width; })()`
	for _, lang := range []string{"en", "zh-CN"} {
		browse(t, ctx, "open the goods page", chromedp.Navigate(fmt.Sprintf("%s/goods/%d", a.URL, g.ID)), chromedp.WaitVisible(`[data-testid=goods-page][data-subscribed=on]`))
		if lang != "en" {
			browse(t, ctx, "in Chinese", chromedp.Click(`[data-testid=lang-zh-CN]`, chromedp.ByQuery), chromedp.WaitVisible(`html[lang=zh-CN] [data-testid=goods-page][data-subscribed=on]`))
		}
		until(t, ctx, "the countdown ticks", gapAfter+` >= 0`)
		var gap float64
		browse(t, ctx, "measure", chromedp.Evaluate(gapAfter, &gap))
		if gap > 1 {
			t.Errorf("%s: the countdown in the sale line is %.1f px wider than its figures", lang, gap)
		}
	}
}
