package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// register creates a shopper with a known password and returns its name and token.
func (a *testApp) register(prefix string) (name, token string) {
	a.T.Helper()
	name = fmt.Sprintf("%s%d", prefix, userSeq.Add(1))
	var out authAnswer
	if st := a.call("POST", "/api/auth/register", "", map[string]string{"username": name, "password": "password123"}, &out); st != 201 {
		a.T.Fatalf("register %s: %d", name, st)
	}
	return name, out.Token
}

// waitText waits until the element's text is want, for changes that arrive
// live or after a form post. The test's context is the only deadline.
func waitText(t *testing.T, ctx context.Context, sel, want string) {
	t.Helper()
	q, _ := json.Marshal(sel)
	got, err := pollJS(ctx, fmt.Sprintf(`document.querySelector(%s)?.innerText ?? ""`, q), func(s string) bool { return strings.TrimSpace(s) == want })
	if err != nil {
		t.Fatalf("%s reads %q (%v), want %q", sel, got, err, want)
	}
}

// waitFor evaluates js until it yields a non-empty string, kept in out.
func waitFor(t *testing.T, ctx context.Context, what, js string, out *string) {
	t.Helper()
	var err error
	if *out, err = pollJS(ctx, js, func(s string) bool { return strings.TrimSpace(s) != "" }); err != nil {
		t.Fatalf("%s never came: %v", what, err)
	}
}

// pollJS evaluates js in the page until done accepts its string, and
// returns the last one read. A read may fall between two documents (a
// form post); it is abandoned and tried again, so the test's context is
// the only deadline (its error comes back with the last read's).
func pollJS(ctx context.Context, js string, done func(string) bool) (string, error) {
	var got string
	var err error
	for ctx.Err() == nil {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = chromedp.Run(rctx, chromedp.Evaluate(js, &got))
		cancel()
		if err == nil && done(got) {
			return got, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return got, fmt.Errorf("%v: %w", err, ctx.Err())
}

func browse(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action) {
	t.Helper()
	if err := chromedp.Run(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// A shopper waits for the start on a disabled Grab button, grabs, sees the
// result and the stock bar move without reloading, and pays in My orders.
func TestGoodsBrowserShopper(t *testing.T) {
	a := startApp(t)
	mt, g := a.liveGoods(5, 1)
	// Opens when the test advances the clock, however long the steps before take.
	const startsIn = 5 * time.Minute
	soonSlot := a.createSlot(mt, startsIn, time.Hour)
	soon := a.createGoods(mt, soonSlot.ID, 3, 1)
	name, token := a.register("shopper")
	ctx := newBrowser(t)
	a.followClock(ctx)
	browse(t, ctx, "log in", browserLogin(ctx, a.URL, name, "password123"))

	// Before the start the button is disabled under a countdown; at the
	// start it opens by itself, without a reload.
	var disabled bool
	browse(t, ctx, "open upcoming goods",
		chromedp.Navigate(fmt.Sprintf("%s/goods/%d", a.URL, soon.ID)),
		chromedp.WaitVisible(`[data-testid=start-countdown]`),
		chromedp.JavascriptAttribute(`[data-testid=grab-button]`, "disabled", &disabled),
	)
	if !disabled {
		t.Fatal("grab button enabled before the start")
	}
	a.advance(startsIn)
	browse(t, ctx, "wait for the start and grab",
		chromedp.WaitEnabled(`[data-testid=grab-button]`),
		chromedp.Click(`[data-testid=grab-button]`),
		chromedp.WaitVisible(`[data-testid=grab-success]`),
	)

	// The slot menu lists the live slot's goods with their stock bars.
	browse(t, ctx, "slot menu",
		chromedp.Navigate(a.URL+"/slots/"+fmt.Sprint(g.SlotID)),
		chromedp.WaitVisible(fmt.Sprintf(`[data-testid=goods-card-%d] [data-testid=stock-bar-%d]`, g.ID, g.ID)),
		chromedp.WaitVisible(fmt.Sprintf(`[data-testid=slot-tab-%d] [data-countdown]`, soonSlot.ID)),
	)

	remaining := fmt.Sprintf(`[data-testid=remaining-%d]`, g.ID)
	browse(t, ctx, "open live goods",
		chromedp.Navigate(fmt.Sprintf("%s/goods/%d", a.URL, g.ID)),
		chromedp.WaitEnabled(`[data-testid=grab-button]`),
		chromedp.WaitVisible(`[data-testid=goods-page][data-subscribed=on]`), // from here on only live events move the bar
		chromedp.Evaluate(`window.__sameDocument = true`, nil),
	)
	waitText(t, ctx, remaining, "5")
	browse(t, ctx, "grab", chromedp.Click(`[data-testid=grab-button]`), chromedp.WaitVisible(`[data-testid=grab-success]`))
	waitText(t, ctx, remaining, "4")
	// Someone else's grab moves the bar too, live.
	other, _ := a.newUser()
	a.grab(other, g.ID)
	waitText(t, ctx, remaining, "3")
	var width string
	var same bool
	browse(t, ctx, "bar and document",
		chromedp.Evaluate(fmt.Sprintf(`document.querySelector('[data-stock-for="%d"] [data-bar]').style.width`, g.ID), &width),
		chromedp.Evaluate(`window.__sameDocument === true`, &same),
	)
	if width != "60%" || !same {
		t.Fatalf("bar width %q (want 60%%), same document %v", width, same)
	}
	// A second grab is refused at once with the reason.
	browse(t, ctx, "regrab", chromedp.Evaluate(`document.querySelector('[data-testid=grab-button]').disabled = false`, nil),
		chromedp.Click(`[data-testid=grab-button]`), chromedp.WaitVisible(`[data-testid=grab-error][data-code=limit_reached]`))

	// My orders: pay, and the status changes in place.
	var mine struct{ Orders []orderJSON }
	a.call("GET", "/api/me/orders", token, nil, &mine)
	var orderID int64
	for _, o := range mine.Orders {
		if o.GoodsID == g.ID {
			orderID = o.ID
		}
	}
	browse(t, ctx, "pay in My orders",
		chromedp.Navigate(a.URL+"/me/orders"),
		chromedp.WaitVisible(fmt.Sprintf(`[data-testid=order-countdown-%d]`, orderID)),
		chromedp.Click(fmt.Sprintf(`[data-testid=pay-%d]`, orderID)),
		chromedp.WaitVisible(`[data-testid=checkout-pay]`), // Pay opens the checkout
		chromedp.Click(`[data-testid=checkout-pay]`),
		chromedp.WaitVisible(`[data-testid=receipt-page]`), // and ends on the receipt
		chromedp.Navigate(a.URL+"/me/orders"),
	)
	waitText(t, ctx, fmt.Sprintf(`[data-testid=order-status-%d]`, orderID), "Paid")
	if got := a.order(token, orderID); got.Status != "paid" {
		t.Fatalf("order is %q after paying in the browser", got.Status)
	}
	// A change made elsewhere (cancelling the other order over the API) shows live.
	var soonOrder int64
	for _, o := range mine.Orders {
		if o.GoodsID == soon.ID {
			soonOrder = o.ID
		}
	}
	if st := a.call("POST", fmt.Sprintf("/api/orders/%d/cancel", soonOrder), token, nil, nil); st != 200 {
		t.Fatalf("cancel: %d", st)
	}
	waitText(t, ctx, fmt.Sprintf(`[data-testid=order-status-%d]`, soonOrder), "Cancelled")
}

// The page's catch-up read after subscribing can be answered from before a
// grab whose live event arrives first; that older answer must not put the
// stock back.
func TestGoodsBrowserCatchUpKeepsLiveEvent(t *testing.T) {
	a := startApp(t)
	_, g := a.liveGoods(5, 1)
	ctx := newBrowser(t)
	// The answer to the page's read of the goods is held, once it has come,
	// until the test releases it.
	hold := fmt.Sprintf(`(() => {
  const fetch0 = window.fetch;
  let release;
  const released = new Promise((r) => { release = r; });
  window.__releaseCatchUp = release;
  window.fetch = (url, opts) => {
    const answer = fetch0(url, opts);
    if (String(url) !== "/api/goods/%d") return answer;
    return answer.then((r) => { window.__catchUpHeld = true; return released.then(() => r); });
  };
})()`, g.ID)
	remaining := fmt.Sprintf(`[data-testid=remaining-%d]`, g.ID)
	browse(t, ctx, "open the goods with its catch-up answered and held",
		chromedp.ActionFunc(func(ctx context.Context) error {
			_, err := page.AddScriptToEvaluateOnNewDocument(hold).Do(ctx)
			return err
		}),
		chromedp.Navigate(fmt.Sprintf("%s/goods/%d", a.URL, g.ID)),
		chromedp.Poll(`window.__catchUpHeld === true`, nil),
	)
	other, _ := a.newUser()
	a.grab(other, g.ID) // after the held read: its event says 4
	waitText(t, ctx, remaining, "4")
	browse(t, ctx, "release the catch-up",
		chromedp.Evaluate(`window.__releaseCatchUp()`, nil),
		chromedp.WaitVisible(`[data-testid=goods-page][data-subscribed=on]`),
	)
	var got string
	browse(t, ctx, "read the stock", chromedp.Text(remaining, &got, chromedp.ByQuery))
	if got != "4" {
		t.Fatalf("after the catch-up answered from before the grab, the page shows %q left, want 4", got)
	}
}

// A merchant creates a slot and goods through the forms (with inline
// validation), then watches the slot's sales dashboard and reconciliation live.
func TestGoodsBrowserMerchant(t *testing.T) {
	a := startApp(t)
	name := fmt.Sprintf("shop%d", userSeq.Add(1))
	if st := a.call("POST", "/api/admin/users", a.adminToken(), map[string]string{"username": name, "password": "password123", "role": "merchant"}, nil); st != 201 {
		t.Fatalf("create merchant: %d", st)
	}
	mt := a.login(name, "password123")
	ctx := newBrowser(t)
	browse(t, ctx, "log in", browserLogin(ctx, a.URL, name, "password123"))

	browse(t, ctx, "create a slot",
		chromedp.Navigate(a.URL+"/admin/slots"),
		chromedp.WaitVisible(`[data-testid=slot-form]`),
		chromedp.SendKeys(`[data-testid=slot-form] [data-testid=input-title]`, "Lunch rush"),
		chromedp.Click(`[data-testid=slot-submit]`),
		chromedp.WaitVisible(`[data-testid=admin-slot]`),
	)
	waitText(t, ctx, `[data-testid=flash]`, "Slot “Lunch rush” created. Add its goods below.")
	gf := `[data-testid=goods-form] `
	browse(t, ctx, "goods form refuses zero stock inline",
		chromedp.SendKeys(gf+`[data-testid=input-title]`, "Rice bowl"),
		chromedp.SendKeys(gf+`[data-testid=input-price_cents]`, "38.00"),
		chromedp.SendKeys(gf+`[data-testid=input-seckill_price_cents]`, "19.50"),
		chromedp.SendKeys(gf+`[data-testid=input-stock]`, "0"),
		chromedp.Click(`[data-testid=goods-submit]`),
	)
	waitText(t, ctx, gf+`[data-testid=error-stock]`, "must be at least 1")
	browse(t, ctx, "fix and add the goods",
		chromedp.SetValue(gf+`[data-testid=input-stock]`, "25"),
		chromedp.SetValue(gf+`[data-testid=input-shards]`, "3"),
		chromedp.Click(`[data-testid=goods-submit]`),
		chromedp.WaitVisible(`[data-testid=sales-table]`),
	)
	var mySlots struct{ Slots []slotJSON }
	a.call("GET", "/api/admin/slots", mt, nil, &mySlots)
	if len(mySlots.Slots) != 1 || mySlots.Slots[0].Title != "Lunch rush" || mySlots.Slots[0].EndAt.Sub(mySlots.Slots[0].StartAt) != 2*time.Hour {
		t.Fatalf("slots after the form: %+v", mySlots.Slots)
	}
	var gs struct{ Goods []goodsJSON }
	a.call("GET", fmt.Sprintf("/api/slots/%d/goods", mySlots.Slots[0].ID), "", nil, &gs)
	if len(gs.Goods) != 1 || gs.Goods[0].Title != "Rice bowl" || gs.Goods[0].PriceCents != 3800 || gs.Goods[0].SeckillPriceCents != 1950 ||
		gs.Goods[0].Stock != 25 || gs.Goods[0].LimitPerUser != 1 || gs.Goods[0].Shards != 3 {
		t.Fatalf("goods after the form: %+v", gs.Goods)
	}
	// The server refuses what the browser cannot check, beside the field.
	// form.submit() skips static/goods.js's own check, so this reaches the server.
	browse(t, ctx, "edit the slot to end before it starts",
		chromedp.SetValue(`[data-testid=slot-edit-form] [data-testid=input-end_at]`, "2000-01-01T00:00"),
		chromedp.Evaluate(`document.querySelector('[data-testid=slot-edit-form]').submit()`, nil),
	)
	waitText(t, ctx, `[data-testid=slot-edit-form] [data-testid=error-end_at]`, "must be after the start")

	// Live dashboard of a slot on sale now.
	sl := a.createSlot(mt, -time.Minute, time.Hour)
	g := a.createGoods(mt, sl.ID, 10, 1)
	browse(t, ctx, "open the dashboard",
		chromedp.Navigate(fmt.Sprintf("%s/admin/slots/%d", a.URL, sl.ID)),
		chromedp.WaitVisible(fmt.Sprintf(`[data-testid=sales-%d]`, g.ID)),
		chromedp.WaitVisible(`[data-testid=admin-slot][data-subscribed=on]`), // the grab below reaches it as an event
	)
	// A live slot's times are shown, not offered: only its title can change.
	var timeInputs int
	browse(t, ctx, "the live slot's edit form",
		chromedp.WaitVisible(`[data-testid=slot-edit-form] [data-testid=slot-times-fixed]`),
		chromedp.Evaluate(`document.querySelectorAll('[data-testid=slot-edit-form] input[type=datetime-local]').length`, &timeInputs),
	)
	if timeInputs != 0 {
		t.Fatalf("a live slot's edit form offers %d time inputs, want none", timeInputs)
	}
	ut, _ := a.newUser()
	o := a.grab(ut, g.ID)
	waitText(t, ctx, fmt.Sprintf(`[data-testid=sales-remaining-%d]`, g.ID), "9")
	a.call("POST", fmt.Sprintf("/api/orders/%d/pay", o.ID), ut, nil, nil)
	waitText(t, ctx, fmt.Sprintf(`[data-testid=sales-paid-%d]`, g.ID), "1")

	// Reconciliation: both sides, in line once flushed and synced.
	if err := a.Goods.SyncStock(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	browse(t, ctx, "reconciliation", chromedp.Navigate(fmt.Sprintf("%s/admin/goods/%d", a.URL, g.ID)), chromedp.WaitVisible(`[data-testid=reconcile-table]`))
	waitText(t, ctx, `[data-testid=reconcile-paid] [data-side=db]`, "1")
	waitText(t, ctx, `[data-testid=drift-summary]`, "live and recorded agree")
}

// My orders catches up on a change it got no event for because its socket
// was not up (still connecting on a busy machine, or dropped): once the
// socket opens, the page reads the orders again.
func TestOrdersBrowserCatchUpAfterSocketDown(t *testing.T) {
	a := startApp(t)
	_, g := a.liveGoods(5, 1)
	name, token := a.register("shopper")
	o := a.grab(token, g.ID)
	ctx := newBrowser(t)
	browse(t, ctx, "log in", browserLogin(ctx, a.URL, name, "password123"))
	status := fmt.Sprintf(`[data-testid=order-status-%d]`, o.ID)
	// Until the test lets it through, every socket the page opens fails at
	// once, as one refused by a busy or restarting server.
	const gate = `(() => {
		const Real = window.WebSocket;
		function Gated(url) {
			if (window.__letSocket) return new Real(url);
			const dead = { readyState: 3, send() {}, close() {} };
			setTimeout(() => { window.__refused = (window.__refused || 0) + 1; dead.onclose && dead.onclose(); }, 0);
			return dead;
		}
		Gated.CONNECTING = 0; Gated.OPEN = 1; Gated.CLOSING = 2; Gated.CLOSED = 3;
		window.WebSocket = Gated;
	})()`
	var refused int
	browse(t, ctx, "open My orders with the live socket refused",
		chromedp.ActionFunc(func(ctx context.Context) error {
			_, err := page.AddScriptToEvaluateOnNewDocument(gate).Do(ctx)
			return err
		}),
		chromedp.Navigate(a.URL+"/me/orders"),
		chromedp.WaitVisible(status),
		chromedp.Poll(`window.__refused > 0`, nil),
		chromedp.Evaluate(`window.__refused`, &refused),
	)
	if st := a.call("POST", fmt.Sprintf("/api/orders/%d/cancel", o.ID), token, nil, nil); st != 200 {
		t.Fatalf("cancel: %d", st)
	}
	browse(t, ctx, "let the socket through", chromedp.Evaluate(`window.__letSocket = true`, nil))
	waitText(t, ctx, status, "Cancelled")
}
