package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// A note pushed live into an open inbox shows the times written in it as
// the reader's, as the server-rendered notes do: a raffle's win, drawn while
// the winner reads the inbox in Beijing, arrives with its pay-by time as a
// <time> written in the reader's zone and language, no "UTC" text, in
// English and in Chinese, at 1366 and at 390 px.
func TestLiveInboxNoteTimesAreTheReaders(t *testing.T) {
	a := startApp(t)
	name, token := a.register("livetimes")
	ctx := newBrowser(t)
	browse(t, ctx, "Beijing time", chromedp.ActionFunc(func(ctx context.Context) error {
		return emulation.SetTimezoneOverride("Asia/Shanghai").Do(ctx)
	}))
	browse(t, ctx, "log in", browserLogin(ctx, a.URL, name, "password123"))
	a.followClock(ctx)
	for _, lang := range []string{"en", "zh-CN"} {
		for _, size := range []struct{ w, h int64 }{{1366, 900}, {390, 844}} {
			what := fmt.Sprintf("%s at %d px", lang, size.w)
			_, g := a.raffleGoods(1, 10*time.Minute)
			a.enterRaffle(token, g.ID, 201)
			var shown string
			browse(t, ctx, what, chromedp.EmulateViewport(size.w, size.h),
				chromedp.Navigate(a.URL+"/me/notifications"),
				chromedp.WaitVisible(`[data-inbox]`),
				chromedp.Evaluate(`document.documentElement.lang`, &shown),
			)
			if shown != lang {
				browse(t, ctx, "switch to "+lang, chromedp.Click(`[data-testid=lang-`+lang+`]`, chromedp.ByQuery))
			}
			browse(t, ctx, what, chromedp.WaitVisible(`html[lang=`+lang+`][data-live=on] [data-inbox]`))
			a.advance(10 * time.Minute)
			if _, err := a.Fair.DrawRaffle(context.Background(), g.ID); err != nil {
				t.Fatal(err)
			}
			var e raffleEntryJSON
			eventually(t, 20*time.Second, "the winner's order", func() bool { e = a.raffleEntry(token, g.ID); return e.OrderID != 0 })
			due := a.order(token, e.OrderID).ExpiresAt.UTC().Truncate(time.Minute)
			sel := fmt.Sprintf(`[data-inbox] li time[datetime="%s"]`, due.Format("2006-01-02T15:04:05.000Z"))
			var note string
			waitFor(t, ctx, what+": the win's note, live", fmt.Sprintf(`(() => { const t = document.querySelector(%q); return t ? t.closest("span").innerText : ""; })()`, sel), &note)
			local := due.In(time.FixedZone("CST", 8*3600)).Format("15:04")
			if strings.Contains(note, "UTC") || !strings.Contains(note, local) {
				t.Errorf("%s: the live note reads %q; want the time as the reader's (%s Beijing time), no UTC", what, note, local)
			}
			if zh := cjk.MatchString(note); zh != (lang == "zh-CN") {
				t.Errorf("%s: the live note reads %q, not in the page's language", what, note)
			}
		}
	}
}
