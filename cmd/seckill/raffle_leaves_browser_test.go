package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/seckill/seckill/db/fair/verify"
)

// The raffle page's fairness section lists the draw's order without any
// shopper's user ID: each entry shows as its leaf in the entries root, the
// reader's own marked and equal to the leaf of their entry's proof, in the
// draw's order (so the draw stays checkable against GET …/draw). Seen live
// as the draw lands on an open page, and on the page loaded after it, in
// English and in Chinese, at 1366 and at 390 px.
func TestRafflePageListsLeavesNotUserIDs(t *testing.T) {
	a := startApp(t)
	_, g := a.raffleGoods(2, 10*time.Minute)
	for i := 0; i < 4; i++ {
		rival, _ := a.newUser()
		a.enterRaffle(rival, g.ID, 201)
	}
	name, token := a.register("raffleleaves")
	a.enterRaffle(token, g.ID, 201)
	ctx := newBrowser(t)
	a.followClock(ctx)
	browse(t, ctx, "log in", browserLogin(ctx, a.URL, name, "password123"))
	page := fmt.Sprintf("%s/goods/%d/raffle", a.URL, g.ID)
	browse(t, ctx, "the raffle page before the draw", chromedp.EmulateViewport(1366, 900),
		chromedp.Navigate(page), chromedp.WaitVisible(`[data-raffle][data-entry-state=entered]`), chromedp.WaitVisible(`html[data-live=on]`))

	a.advance(10 * time.Minute)
	if _, err := a.Fair.DrawRaffle(context.Background(), g.ID); err != nil {
		t.Fatal(err)
	}
	d := a.raffleDraw(g.ID)
	var mine struct {
		Entry struct {
			Leaf string `json:"leaf"`
		}
	}
	if st := a.call("GET", fmt.Sprintf("/api/goods/%d/entries/me", g.ID), token, nil, &mine); st != 200 || mine.Entry.Leaf == "" {
		t.Fatalf("my entry: %d, leaf %q", st, mine.Entry.Leaf)
	}
	check := func(what string) {
		t.Helper()
		var list []struct {
			Text, Leaf, Class string
		}
		var raw string
		browse(t, ctx, what+": the fairness section",
			chromedp.Evaluate(`document.querySelector("[data-testid=raffle-fairness]").open = true`, nil),
			chromedp.WaitVisible(fmt.Sprintf(`[data-testid=raffle-order] li:nth-child(%d)`, len(d.Order))),
			chromedp.Evaluate(`JSON.stringify(Array.from(document.querySelectorAll("[data-testid=raffle-order] li"), (li) => ({Text: li.innerText, Leaf: li.dataset.leaf || "", Class: li.className})))`, &raw),
		)
		if err := json.Unmarshal([]byte(raw), &list); err != nil {
			t.Fatal(err)
		}
		if len(list) != len(d.Order) {
			t.Fatalf("%s: %d entries listed, the draw has %d", what, len(list), len(d.Order))
		}
		yours := 0
		for i, li := range list {
			leaf := verify.EntryLeaf(g.ID, d.Order[i])
			want := hex.EncodeToString(leaf[:])
			text := strings.TrimSpace(li.Text)
			if li.Leaf != want || !strings.HasPrefix(want, text) || len(text) < 8 {
				t.Errorf("%s: entry %d reads %q (leaf %q); want the start of its leaf %s", what, i+1, text, li.Leaf, want)
			}
			for _, u := range d.Order {
				if text == strconv.FormatInt(u, 10) || strings.Contains(li.Leaf+li.Text, "user") {
					t.Errorf("%s: entry %d shows user ID %d", what, i+1, u)
				}
			}
			if strings.Contains(li.Class, "you") {
				yours++
				if li.Leaf != mine.Entry.Leaf {
					t.Errorf("%s: the entry marked yours has leaf %s, your proof's is %s", what, li.Leaf, mine.Entry.Leaf)
				}
			}
		}
		if yours != 1 {
			t.Errorf("%s: %d entries marked yours, want 1", what, yours)
		}
		var body string
		browse(t, ctx, what, chromedp.Evaluate(`document.querySelector("[data-testid=raffle-fairness]").innerText`, &body))
		for _, u := range d.Order {
			if strings.Contains(" "+strings.Join(strings.Fields(body), " ")+" ", " "+strconv.FormatInt(u, 10)+" ") {
				t.Errorf("%s: the fairness section shows %d, an entrant's user ID:\n%s", what, u, body)
			}
		}
	}
	check("live at the draw")
	for _, lang := range []string{"en", "zh-CN"} {
		for _, size := range []struct{ w, h int64 }{{1366, 900}, {390, 844}} {
			what := fmt.Sprintf("%s at %d px", lang, size.w)
			var shown string
			browse(t, ctx, what, chromedp.EmulateViewport(size.w, size.h), chromedp.Navigate(page),
				chromedp.WaitVisible(`[data-testid=raffle-page]`), chromedp.Evaluate(`document.documentElement.lang`, &shown))
			if shown != lang {
				browse(t, ctx, "switch to "+lang, chromedp.Click(`[data-testid=lang-`+lang+`]`, chromedp.ByQuery),
					chromedp.WaitVisible(`html[lang=`+lang+`] [data-testid=raffle-page]`))
			}
			check(what)
			var intro string
			browse(t, ctx, what, chromedp.Evaluate(`document.querySelector("[data-testid=raffle-order]").previousElementSibling.innerText`, &intro))
			if cjk.MatchString(intro) != (lang == "zh-CN") {
				t.Errorf("%s: the order's heading reads %q", what, intro)
			}
		}
	}
}
