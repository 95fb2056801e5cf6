package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/seckill/seckill/db/demo"
	"github.com/seckill/seckill/views/i18n"
)

// A notice pushed live reaches a Chinese page as the English the server
// stored; the page's T translates it through the format it was made from,
// as the server's pages do: for every format the scripts are sent, the
// browser's translation of a finished message is the server's, and it is
// Chinese. A notice arriving in the inbox shows translated.
func TestLiveNoticesInChinese(t *testing.T) {
	a := startApp(t, func(c *Config) { c.Demo = true })
	ctx := newBrowser(t)
	browse(t, ctx, "log in", browserLogin(ctx, a.URL, demo.Shopper, demo.ShopperPassword))
	browse(t, ctx, "switch to Chinese",
		chromedp.Navigate(a.URL+"/me/notifications"),
		chromedp.Click(`[data-testid=lang-zh-CN]`),
		chromedp.WaitVisible(`html[lang=zh-CN] [data-testid=lang-en]`),
	)
	verb := regexp.MustCompile(`%(\[\d+\])?[-+# 0]*\d*(\.\d+)?[sdvqgf%]`)
	for _, f := range i18n.LiveTexts {
		var args []any
		for _, v := range verb.FindAllString(f, -1) {
			switch v[len(v)-1] {
			case 'd':
				args = append(args, 7)
			case 's':
				args = append(args, "Tea pot")
			}
		}
		msg := fmt.Sprintf(f, args...)
		want := i18n.Zh.T(msg)
		if want == msg || !cjk.MatchString(want) {
			t.Fatalf("the server does not translate %q", msg)
		}
		q, _ := json.Marshal(msg)
		var got string
		browse(t, ctx, "translate "+msg, chromedp.Evaluate(fmt.Sprintf(`T(%s)`, q), &got))
		if got != want {
			t.Errorf("the browser translates %q as %q, the server as %q", msg, got, want)
		}
	}
	notice := fmt.Sprintf("“%s” goes on sale in %d minutes, at %s.", "Tea pot", 5, "2026-12-06 02:48 UTC")
	q, _ := json.Marshal(notice)
	browse(t, ctx, "a notice arrives", chromedp.Evaluate(fmt.Sprintf(
		`document.dispatchEvent(new CustomEvent("seckill:notification", {detail: {id: 987654, message: %s, goods_id: 1, created_at: new Date().toISOString()}}))`, q), nil))
	// Its time shows as the reader's (a <time>, as on the server's inbox page), the rest as the server translates it.
	var text string
	waitFor(t, ctx, "the notice", `(() => { const s = document.querySelector("[data-testid=notification-987654] span"); if (!s || !s.querySelector('time[datetime="2026-12-06T02:48:00.000Z"]')) return ""; const c = s.cloneNode(true); c.querySelectorAll("time").forEach((e) => e.replaceWith("<time>")); return c.textContent; })()`, &text)
	if want := strings.Replace(i18n.Zh.T(notice), "2026-12-06 02:48 UTC", "<time>", 1); text != want {
		t.Errorf("the notice reads %q, want %q", text, want)
	}
}
