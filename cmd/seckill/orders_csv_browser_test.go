package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// A merchant's orders exports are written for them: from the goods' page
// and from the orders desk, the export link downloads a header in the
// merchant's language, the status in words and the times in their zone
// (Beijing here, the link carrying the browser's), in English and in
// Chinese, at 1366 and at 390 px; with a bearer token and no cookie the
// account's picked language holds. format=machine keeps the program's form
// (snake_case header, raw status, RFC 3339), and a bad format or zone is
// 400 invalid.
func TestOrdersCSVInTheReadersLanguageAndZone(t *testing.T) {
	a := startApp(t)
	name := fmt.Sprintf("csvm%d", userSeq.Add(1))
	if st := a.call("POST", "/api/admin/users", a.adminToken(), map[string]string{"username": name, "password": "password123", "role": "merchant"}, nil); st != 201 {
		t.Fatalf("create merchant: %d", st)
	}
	mt := a.login(name, "password123")
	sl := a.createSlot(mt, -time.Minute, time.Hour)
	g := a.createGoods(mt, sl.ID, 20, 5)
	shopper, _ := a.newUser()
	o := a.grab(shopper, g.ID)
	if st, _ := a.pay(shopper, o.ID, 0); st != 200 {
		t.Fatalf("pay: %d", st)
	}
	eventually(t, 15*time.Second, "the desk to list the paid order", func() bool {
		return len(a.desk(mt, url.Values{"status": {"paid"}}).Orders) == 1
	})
	beijing, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	parse := func(what, body string) [][]string {
		t.Helper()
		rows, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(body, "\uFEFF"))).ReadAll()
		if err != nil || len(rows) != 2 {
			t.Fatalf("%s: %d rows (%v):\n%s", what, len(rows), err, body)
		}
		return rows
	}
	col := func(rows [][]string, i int) string { return rows[1][i] }

	ctx := newBrowser(t)
	browse(t, ctx, "Beijing time", chromedp.ActionFunc(func(ctx context.Context) error {
		return emulation.SetTimezoneOverride("Asia/Shanghai").Do(ctx)
	}))
	browse(t, ctx, "log in", browserLogin(ctx, a.URL, name, "password123"))
	words := map[string]struct{ number, status, placed string }{
		"en":    {"Order number", "Paid", "Placed at (Asia/Shanghai)"},
		"zh-CN": {"订单号", "已支付", "下单时间 (Asia/Shanghai)"},
	}
	for _, lang := range []string{"en", "zh-CN"} {
		for _, size := range []struct{ w, h int64 }{{1366, 900}, {390, 844}} {
			for _, p := range []struct {
				page, link string
				placed     int // the created_at column
			}{{fmt.Sprintf("/admin/goods/%d", g.ID), "orders-csv", 8}, {"/admin/orders", "desk-csv", 10}} {
				what := fmt.Sprintf("%s at %d px, %s", lang, size.w, p.link)
				var shown string
				browse(t, ctx, what, chromedp.EmulateViewport(size.w, size.h), chromedp.Navigate(a.URL+p.page),
					chromedp.WaitVisible(`[data-testid=`+p.link+`]`), chromedp.Evaluate(`document.documentElement.lang`, &shown))
				if shown != lang {
					browse(t, ctx, "switch to "+lang, chromedp.Click(`[data-testid=lang-`+lang+`]`, chromedp.ByQuery),
						chromedp.WaitVisible(`html[lang=`+lang+`] [data-testid=`+p.link+`]`))
				}
				var href, body, machine string
				browse(t, ctx, what+": the export",
					chromedp.Evaluate(`document.querySelector("[data-testid=`+p.link+`]").getAttribute("href")`, &href),
					chromedp.Evaluate(`fetch(document.querySelector("[data-testid=`+p.link+`]").href).then((r) => r.text())`, &body, csvAwait),
					chromedp.Evaluate(`fetch(document.querySelector("[data-testid=`+p.link+`]").href + "&format=machine").then((r) => r.text())`, &machine, csvAwait),
				)
				if !strings.Contains(href, "tz=Asia%2FShanghai") {
					t.Errorf("%s: the link %q does not carry the reader's zone", what, href)
				}
				rows, raw := parse(what, body), parse(what+" (machine)", machine)
				w := words[lang]
				if rows[0][0] != w.number || rows[0][p.placed] != w.placed {
					t.Errorf("%s: header %q; want %q … %q", what, rows[0], w.number, w.placed)
				}
				if raw[0][0] != "number" || raw[0][p.placed] != "created_at" || col(raw, p.placed-4) != "paid" {
					t.Errorf("%s: the machine form %q", what, raw)
				}
				if got := col(rows, p.placed-4); got != w.status {
					t.Errorf("%s: status %q, want %q", what, got, w.status)
				}
				at, err := time.Parse(time.RFC3339, col(raw, p.placed))
				if err != nil {
					t.Fatalf("%s: machine created_at %q: %v", what, col(raw, p.placed), err)
				}
				if want := at.In(beijing).Format(time.DateTime); col(rows, p.placed) != want {
					t.Errorf("%s: placed at %q, want %q (Beijing time)", what, col(rows, p.placed), want)
				}
			}
		}
	}
	// The account picked Chinese: a program with its token and no cookie reads Chinese words too, unless it asks for the machine form.
	if st, body := a.getPage(mt, "/api/admin/orders.csv"); st != 200 || !strings.HasPrefix(strings.TrimPrefix(body, "\uFEFF"), "订单号,") {
		t.Errorf("the desk's export with the account's token: %d %q", st, body)
	}
	if st, body := a.getPage(mt, fmt.Sprintf("/api/admin/goods/%d/orders.csv?format=machine", g.ID)); st != 200 || !strings.HasPrefix(strings.TrimPrefix(body, "\uFEFF"), "number,order_id,") {
		t.Errorf("the machine form with the account's token: %d %q", st, body)
	}
	for _, q := range []string{"format=xml", "tz=Mars%2FOlympus"} {
		a.wantError("GET", "/api/admin/orders.csv?"+q, mt, nil, 400, "invalid")
		a.wantError("GET", fmt.Sprintf("/api/admin/goods/%d/orders.csv?%s", g.ID, q), mt, nil, 400, "invalid")
	}
}

// csvAwait makes an Evaluate wait for the promise the script returns.
func csvAwait(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }
