package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// shopperViewport is a browser window size the shopper pages must work at.
type shopperViewport struct {
	name string
	w, h int64
}

var shopperViewports = []shopperViewport{{"desktop", 1280, 800}, {"phone", 360, 740}}

// phone reports whether the viewport is a phone's.
func (v shopperViewport) phone() bool { return v.w < 720 }

// sized sets the tab to the viewport: a phone honours the pages' viewport meta and takes touches.
func (v shopperViewport) sized() chromedp.Action {
	if v.phone() {
		return chromedp.EmulateViewport(v.w, v.h, chromedp.EmulateMobile)
	}
	return chromedp.EmulateViewport(v.w, v.h)
}

// forViewports runs fn as a subtest at the desktop and the phone size, each with its own app and browser.
func forViewports(t *testing.T, fn func(t *testing.T, v shopperViewport)) {
	for _, v := range shopperViewports {
		t.Run(v.name, func(t *testing.T) { fn(t, v) })
	}
}

// until waits, on the page's own animation frames, until the JavaScript
// expression is true; the test's context is the only deadline.
func until(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	if err := chromedp.Run(ctx, chromedp.Poll(expr, nil)); err != nil {
		var now string
		_ = chromedp.Run(context.WithoutCancel(ctx), chromedp.Evaluate(`document.body ? document.body.innerText.slice(0, 600) : ""`, &now))
		t.Fatalf("waiting for %s (%s): %v\npage: %s", what, expr, err, now)
	}
}

// grabButtonIs is a JavaScript test of the Grab button's text and disabled state.
func grabButtonIs(label string, enabled bool) string {
	q, _ := json.Marshal(label)
	return fmt.Sprintf(`(() => { const b = document.querySelector("[data-testid=grab-button]");
  return !!b && b.textContent.trim() === %s && b.disabled === %v; })()`, q, !enabled)
}

// saleStateStarts is a JavaScript test of the goods page's sale state line.
func saleStateStarts(prefix string) string {
	q, _ := json.Marshal(prefix)
	return fmt.Sprintf(`(document.querySelector("[data-testid=sale-state]")?.innerText ?? "").trim().startsWith(%s)`, q)
}

// Every state of a seckill goods' Grab button, live and after a reload:
// upcoming under a countdown, live at the injected clock's start (the
// countdown turns into "On sale now"), limit reached at once after the
// grab that reaches it, sold out live when someone else takes the last
// unit (grey, no red button), and ended when the clock passes the end.
func TestShopperBrowserGrabStates(t *testing.T) {
	forViewports(t, func(t *testing.T, v shopperViewport) {
		a := startApp(t)
		mt, _ := a.newMerchant()
		const startsIn = 10 * time.Minute
		sl := a.createSlot(mt, startsIn, time.Hour)
		mine := a.createGoods(mt, sl.ID, 5, 1) // the shopper's limit: one
		last := a.createGoods(mt, sl.ID, 1, 1) // someone else takes the only unit
		name, _ := a.register("states")
		ctx := newBrowser(t)
		a.followClock(ctx)
		browse(t, ctx, "log in", v.sized(), browserLogin(ctx, a.URL, name, "password123"))

		goodsURL := func(id int64) string { return fmt.Sprintf("%s/goods/%d", a.URL, id) }
		browse(t, ctx, "open the upcoming goods", chromedp.Navigate(goodsURL(mine.ID)), chromedp.WaitVisible(`[data-testid=start-countdown]`))
		until(t, ctx, "upcoming: disabled under a countdown", grabButtonIs("Grab for ¥25.00", false)+" && "+saleStateStarts("Starts in "))

		a.advance(startsIn)
		until(t, ctx, "live at the start, without a reload", grabButtonIs("Grab for ¥25.00", true)+" && "+saleStateStarts("On sale now"))

		browse(t, ctx, "grab", chromedp.Click(`[data-testid=grab-button]`, chromedp.NodeEnabled), chromedp.WaitVisible(`[data-testid=grab-success]`))
		until(t, ctx, "limit reached at once", grabButtonIs("Limit reached", false))
		browse(t, ctx, "reload", chromedp.Reload(), chromedp.WaitVisible(`[data-testid=grab-box]`))
		until(t, ctx, "limit reached after a reload", grabButtonIs("Limit reached", false))

		// Sold out live: another shopper takes the last unit while the page is open.
		browse(t, ctx, "open the last unit",
			chromedp.Navigate(goodsURL(last.ID)),
			chromedp.WaitVisible(`[data-testid=goods-page][data-subscribed=on]`),
		)
		until(t, ctx, "the last unit is on sale", grabButtonIs("Grab for ¥25.00", true))
		other, _ := a.newUser()
		a.grab(other, last.ID)
		soldOut := grabButtonIs("Sold out", false) + " && " + saleStateStarts("Sold out") +
			` && getComputedStyle(document.querySelector("[data-testid=grab-button]")).backgroundColor !== getComputedStyle(document.querySelector(".brand")).color`
		until(t, ctx, "sold out, live", soldOut)
		var bg string
		browse(t, ctx, "button colour", chromedp.Evaluate(`getComputedStyle(document.querySelector("[data-testid=grab-button]")).backgroundColor`, &bg))
		if bg == "rgb(229, 50, 45)" { // --brand
			t.Fatalf("a sold-out Grab button is still red")
		}
		browse(t, ctx, "reload", chromedp.Reload(), chromedp.WaitVisible(`[data-testid=grab-box]`))
		until(t, ctx, "sold out after a reload", soldOut)

		// The slot page's cards say the same.
		browse(t, ctx, "slot page", chromedp.Navigate(fmt.Sprintf("%s/slots/%d", a.URL, sl.ID)), chromedp.WaitVisible(`[data-testid=slot-goods]`))
		until(t, ctx, "cards: sold out and limit reached",
			fmt.Sprintf(`document.querySelector("[data-testid=card-state-%d]")?.textContent.trim() === "Sold out" && document.querySelector("[data-testid=card-state-%d]")?.textContent.trim() === "Limit reached"`, last.ID, mine.ID))

		// Ended: the clock passes the end with the page open.
		browse(t, ctx, "back to the goods", chromedp.Navigate(goodsURL(last.ID)), chromedp.WaitVisible(`[data-testid=grab-box]`))
		a.advance(time.Hour)
		until(t, ctx, "ended, without a reload", grabButtonIs("Sale ended", false)+" && "+saleStateStarts("This sale has ended"))
		browse(t, ctx, "the other goods after the end", chromedp.Navigate(fmt.Sprintf("%s/goods/%d", a.URL, mine.ID)), chromedp.WaitVisible(`[data-testid=grab-box]`))
		until(t, ctx, "ended after a reload", grabButtonIs("Sale ended", false))
	})
}

// An order that ends (cancelled) gives the shopper's place under the limit
// back, live; the coupon button turns "Limit reached" after the grab that
// reaches the limit and after a limit_reached answer.
func TestShopperBrowserLimits(t *testing.T) {
	forViewports(t, func(t *testing.T, v shopperViewport) {
		a := startApp(t)
		mt, g := a.liveGoods(5, 1)
		now := a.Clock.Now()
		one := a.couponCreate(mt, "One each", 10, 1, now.Add(-time.Minute), now.Add(time.Hour))
		two := a.couponCreate(mt, "Two each", 10, 2, now.Add(-time.Minute), now.Add(time.Hour))
		name, token := a.register("limits")
		ctx := newBrowser(t)
		browse(t, ctx, "log in", v.sized(), browserLogin(ctx, a.URL, name, "password123"))

		o := a.grab(token, g.ID)
		browse(t, ctx, "open the goods", chromedp.Navigate(fmt.Sprintf("%s/goods/%d", a.URL, g.ID)),
			chromedp.WaitVisible(`[data-testid=goods-page][data-subscribed=on]`))
		until(t, ctx, "limit reached from the server's orders", grabButtonIs("Limit reached", false))
		if st := a.call("POST", fmt.Sprintf("/api/orders/%d/cancel", o.ID), token, nil, nil); st != 200 {
			t.Fatalf("cancel: %d", st)
		}
		until(t, ctx, "a cancelled order frees the limit, live", grabButtonIs("Grab for ¥25.00", true))

		btn := func(id int64) string { return fmt.Sprintf(`document.querySelector("[data-testid=grab-%d]")`, id) }
		is := func(id int64, label string, enabled bool) string {
			return fmt.Sprintf(`(() => { const b = %s; return !!b && b.textContent.trim() === %q && b.disabled === %v; })()`, btn(id), label, !enabled)
		}
		browse(t, ctx, "coupon centre", chromedp.Navigate(a.URL+"/coupons"), chromedp.WaitVisible(tid("coupon", one.ID)))
		until(t, ctx, "both coupons open", is(one.ID, "Grab", true)+" && "+is(two.ID, "Grab", true))
		browse(t, ctx, "grab the one-each coupon", chromedp.Click(tid("grab", one.ID)), chromedp.WaitVisible(tid("to-my-coupons")))
		until(t, ctx, "limit reached after the grab that reaches it", is(one.ID, "Limit reached", false))
		// Two grabs elsewhere: the page still offers Grab, the server answers limit_reached.
		for range 2 {
			if st := a.call("POST", fmt.Sprintf("/api/coupons/%d/grab", two.ID), token, nil, nil); st != 201 {
				t.Fatalf("grab coupon: %d", st)
			}
		}
		browse(t, ctx, "grab past the limit", chromedp.Click(tid("grab", two.ID), chromedp.NodeEnabled))
		until(t, ctx, "limit reached after limit_reached", is(two.ID, "Limit reached", false))
		browse(t, ctx, "reload", chromedp.Reload(), chromedp.WaitVisible(tid("coupon", one.ID)))
		until(t, ctx, "limit reached after a reload", is(one.ID, "Limit reached", false)+" && "+is(two.ID, "Limit reached", false))
	})
}

// shownTime is how the pages write an instant in a zone: "1 Dec 2026, 14:05".
func shownTime(t time.Time, loc *time.Location) string {
	t = t.In(loc)
	return fmt.Sprintf("%d %s %d, %02d:%02d", t.Day(), t.Format("Jan"), t.Year(), t.Hour(), t.Minute())
}

// With the browser in Asia/Shanghai, every time on the shopper's and the
// merchant's pages reads the server's instant in Shanghai time, and the
// merchant's date-time inputs show the same; saving the form keeps the instant.
func TestShopperBrowserTimes(t *testing.T) {
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Skip("no zone data:", err)
	}
	forViewports(t, func(t *testing.T, v shopperViewport) {
		a := startApp(t)
		mt, _ := a.newMerchant()
		sl := a.createSlot(mt, 2*time.Hour, time.Hour)
		g := a.createGoods(mt, sl.ID, 5, 1)
		ctx := newBrowser(t)
		browse(t, ctx, "zone and size", chromedp.ActionFunc(func(ctx context.Context) error {
			return emulation.SetTimezoneOverride("Asia/Shanghai").Do(ctx)
		}), v.sized())
		browse(t, ctx, "log in as the admin", browserLogin(ctx, a.URL, "admin", testAdminPassword))

		start := shownTime(sl.StartAt, shanghai)
		timeAt := func(sel string) string {
			var got string
			browse(t, ctx, "read "+sel, chromedp.Text(sel, &got, chromedp.ByQuery))
			return strings.TrimSpace(strings.ReplaceAll(got, "Sept", "Sep"))
		}
		checkStart := func(page, sel string) {
			t.Helper()
			browse(t, ctx, "open "+page, chromedp.Navigate(a.URL+page), chromedp.WaitVisible(sel))
			if got := timeAt(sel); got != start {
				t.Errorf("%s %s shows %q, want %q (the start in Shanghai)", page, sel, got, start)
			}
		}
		tabTime := fmt.Sprintf(`[data-testid=slot-tab-%d] time`, sl.ID)
		checkStart(fmt.Sprintf("/slots/%d", sl.ID), tabTime)
		checkStart(fmt.Sprintf("/goods/%d", g.ID), `[data-testid=sale-state] time`)
		checkStart("/admin/slots", fmt.Sprintf(`[data-testid=slot-row-%d] time`, sl.ID))

		// The edit form's input is the same wall time; saving keeps the instant.
		input := `[data-testid=slot-edit-form] [data-testid=input-start_at]`
		var val string
		browse(t, ctx, "admin slot form",
			chromedp.Navigate(fmt.Sprintf("%s/admin/slots/%d", a.URL, sl.ID)),
			chromedp.WaitVisible(input),
			chromedp.Value(input, &val, chromedp.ByQuery),
		)
		if want := sl.StartAt.In(shanghai).Format("2006-01-02T15:04"); val != want {
			t.Fatalf("the form's start reads %q, want %q (Shanghai), beside %q", val, want, start)
		}
		browse(t, ctx, "save the slot",
			chromedp.SetValue(`[data-testid=slot-edit-form] [data-testid=input-title]`, "Renamed in Shanghai"),
			chromedp.Click(`[data-testid=slot-edit-submit]`),
		)
		waitText(t, ctx, `[data-testid=slot-title]`, "Renamed in Shanghai Upcoming")
		var mySlots struct{ Slots []slotJSON }
		a.call("GET", "/api/admin/slots", mt, nil, &mySlots)
		if len(mySlots.Slots) != 1 || !mySlots.Slots[0].StartAt.Equal(sl.StartAt.Truncate(time.Minute)) {
			t.Fatalf("after saving from Shanghai the slot starts %v, want %v", mySlots.Slots[0].StartAt, sl.StartAt.Truncate(time.Minute))
		}
		if got := timeAt(`[data-testid=admin-slot] p.muted time`); got != shownTime(sl.StartAt.Truncate(time.Minute), shanghai) {
			t.Fatalf("the slot page shows %q after saving", got)
		}
		// A time a script adds later (a grab's reminder, a red packet's row) is formatted too.
		browse(t, ctx, "a time added by a script", chromedp.Evaluate(fmt.Sprintf(`(() => {
  const t = document.createElement("time"); t.id = "late"; t.setAttribute("datetime", %q); document.body.append(t); })()`, sl.EndAt.UTC().Format(time.RFC3339)), nil))
		until(t, ctx, "the added time formatted", fmt.Sprintf(`document.getElementById("late").textContent.replace("Sept", "Sep") === %q`, shownTime(sl.EndAt, shanghai)))
	})
}

// shopperPages are every page a shopper or a merchant opens, with IDs filled in by the test.
var shopperPages = []string{"/", "/slots", "/slots/%[1]d", "/goods/%[2]d", "/coupons", "/redpackets", "/redpackets/%[3]d",
	"/me/orders", "/orders/%[5]d/checkout", "/me/coupons", "/me/reminders", "/me/notifications", "/settings",
	"/admin", "/admin/users", "/admin/slots", "/admin/slots/%[1]d", "/admin/goods/%[2]d", "/admin/coupons", "/admin/coupons/%[4]d",
	"/admin/redpackets", "/admin/redpackets/%[3]d", "/admin/audit", "/nope"}

// No page scrolls sideways (the document is no wider than the window; a
// phone would zoom out to a wider page, so the width is also checked against
// the device's), at
// the desktop and the phone size; on a phone the menu is a toggle that
// opens and closes, and the bar stays one line.
func TestShopperBrowserLayout(t *testing.T) {
	forViewports(t, func(t *testing.T, v shopperViewport) {
		a := startApp(t)
		admin := a.adminToken()
		sl := a.createSlot(admin, -time.Minute, time.Hour)
		a.createSlot(admin, time.Hour, time.Hour)
		a.createSlot(admin, 3*time.Hour, time.Hour)
		g := a.createGoods(admin, sl.ID, 5, 2)
		a.grab(admin, g.ID)
		o := a.grab(admin, g.ID)
		rp := a.createRedPacket(admin, map[string]any{"title": "Layout packet with a long enough title", "total_cents": 10000, "count": 5, "mode": "random"})
		a.grabRedPacket(admin, rp.ID)
		now := a.Clock.Now()
		cp := a.couponCreate(admin, "Layout coupon", 10, 1, now.Add(90*time.Minute), now.Add(3*time.Hour))
		a.couponBook(admin, cp.ID, 30, "app")
		a.call("POST", fmt.Sprintf("/api/coupons/%d/grab", a.couponCreate(admin, "Live coupon", 10, 1, now.Add(-time.Minute), now.Add(time.Hour)).ID), admin, nil, nil)

		ctx := newBrowser(t)
		browse(t, ctx, "log in", v.sized(), browserLogin(ctx, a.URL, "admin", testAdminPassword))
		pages := append([]string{}, shopperPages...)
		for _, p := range pages {
			path := p
			if strings.Contains(p, "%") {
				path = fmt.Sprintf(p, sl.ID, g.ID, rp.ID, cp.ID, o.ID)
			}
			var width, inner int64
			browse(t, ctx, "open "+path,
				chromedp.Navigate(a.URL+path),
				chromedp.WaitReady(`footer`),
				chromedp.Evaluate(`document.documentElement.scrollWidth`, &width),
				chromedp.Evaluate(`window.innerWidth`, &inner),
			)
			if width > inner || width > v.w {
				var wide string
				_ = chromedp.Run(ctx, chromedp.Evaluate(fmt.Sprintf(`Array.from(document.querySelectorAll("body *")).filter((e) => e.getBoundingClientRect().right > %d.5).slice(0, 5).map((e) => e.tagName + "." + e.className + "#" + (e.dataset.testid || "")).join(", ")`, v.w), &wide))
				t.Errorf("%s at %s is %d px wide in a %d px window; too wide: %s", path, v.name, width, inner, wide)
			}
		}
		// Logged out: the login page.
		browse(t, ctx, "log out", chromedp.Click(`[data-testid=logout]`), chromedp.WaitVisible(`[data-testid=nav-login]`))
		var width, inner int64
		browse(t, ctx, "login page", chromedp.Navigate(a.URL+"/login"), chromedp.WaitVisible(`[data-testid=login-form]`),
			chromedp.Evaluate(`document.documentElement.scrollWidth`, &width), chromedp.Evaluate(`window.innerWidth`, &inner))
		if width > inner || width > v.w {
			t.Errorf("/login at %s is %d px wide in a %d px window", v.name, width, inner)
		}

		browse(t, ctx, "back in", browserLogin(ctx, a.URL, "admin", testAdminPassword))
		navShown := `document.querySelector("[data-testid=nav]").getBoundingClientRect().height > 0`
		toggleShown := `getComputedStyle(document.querySelector("[data-testid=menu-toggle]")).display !== "none"`
		var bar float64
		browse(t, ctx, "the bar", chromedp.Evaluate(`document.querySelector(".topbar").getBoundingClientRect().height`, &bar))
		if !v.phone() {
			until(t, ctx, "desktop: the nav shows, no toggle", navShown+" && !("+toggleShown+")")
			return
		}
		if bar > 64 {
			t.Errorf("the phone's top bar is %.0f px tall", bar)
		}
		until(t, ctx, "phone: the menu is closed behind a toggle", "!("+navShown+") && "+toggleShown)
		browse(t, ctx, "open the menu", chromedp.Click(`[data-testid=menu-toggle]`))
		until(t, ctx, "the menu opens", navShown+` && document.querySelector("[data-testid=menu-toggle]").getAttribute("aria-expanded") === "true"`)
		browse(t, ctx, "close the menu", chromedp.Click(`[data-testid=menu-toggle]`))
		until(t, ctx, "the menu closes", "!("+navShown+")")
		browse(t, ctx, "open it and follow a link", chromedp.Click(`[data-testid=menu-toggle]`), chromedp.Click(`[data-testid=nav] a[href="/coupons"]`), chromedp.WaitVisible(`[data-testid=coupon-list]`))
	})
}

// The favicon answers, the layout links it, and unknown paths get the
// product's own 404 page or JSON error, never Fiber's "Cannot GET".
func TestShopperFaviconAndNotFound(t *testing.T) {
	a := startApp(t)
	res, err := http.Get(a.URL + "/favicon.ico")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "image/x-icon" {
		t.Fatalf("/favicon.ico: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if st, body := get(t, a.URL+"/"); st != 200 || !strings.Contains(body, `rel="icon" href="/favicon.ico"`) {
		t.Fatalf("the layout links no favicon")
	}
	st, body := get(t, a.URL+"/nope")
	if st != 404 || strings.Contains(body, "Cannot GET") || !strings.Contains(body, "Not found") || !strings.Contains(body, "No such page.") {
		t.Fatalf("GET /nope: %d %s", st, body)
	}
	a.wantError("GET", "/api/nope", "", nil, 404, "not_found")
	var out struct{ Error struct{ Message string } }
	a.call("GET", "/api/nope", "", nil, &out)
	if out.Error.Message != "no such endpoint" {
		t.Fatalf("GET /api/nope says %q", out.Error.Message)
	}
}
