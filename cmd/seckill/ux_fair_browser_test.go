package main

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The two widths a newcomer's pages must hold at (issue 35): a laptop's
// and a phone's.
var uxViewports = []shopperViewport{{"1366", 1366, 900}, {"390", 390, 844}}

// forUXViewports runs fn as a subtest at each of uxViewports.
func forUXViewports(t *testing.T, fn func(t *testing.T, v shopperViewport)) {
	for _, v := range uxViewports {
		t.Run(v.name, func(t *testing.T) { fn(t, v) })
	}
}

// visibleText is a JavaScript expression: the element's rendered text
// ("" when it is missing or hidden).
func visibleText(sel string) string {
	q, _ := json.Marshal(sel)
	return fmt.Sprintf(`(() => { const e = document.querySelector(%s); return e && e.offsetParent !== null ? e.innerText : ""; })()`, q)
}

// isHidden is a JavaScript test: the element is missing or not rendered.
func isHidden(sel string) string {
	q, _ := json.Marshal(sel)
	return fmt.Sprintf(`(() => { const e = document.querySelector(%s); return !e || e.offsetParent === null; })()`, q)
}

// pageSays is a JavaScript test: the rendered text of the main content holds s.
func pageSays(s string) string {
	q, _ := json.Marshal(s)
	return fmt.Sprintf(`(document.querySelector("main")?.innerText ?? document.body.innerText).includes(%s)`, q)
}

// The waiting room never contradicts itself (issue 35, points 1 and 2),
// at both widths: before joining the page asks the API nothing (no 404 for
// a ticket it does not have); before the start it says places are drawn
// at random, with no number, however many join; after the start it shows
// the place; an admission that runs out unused reads "Your turn passed"
// with "Join again" (the units all still there), not "every unit has
// gone"; joining again and grabbing shows the order with its link, no
// Grab button and no admission countdown, and stays so when the admission
// runs out and after a reload.
func TestUXQueueBrowserNoContradiction(t *testing.T) {
	forUXViewports(t, func(t *testing.T, v shopperViewport) {
		a := startApp(t)
		_, g := a.queueGoods(5, 1, time.Minute, map[string]any{"admission_seconds": 60})
		name, _ := a.register("roomux")
		ctx := newBrowser(t)
		a.followClock(ctx)
		browse(t, ctx, "size and log in", v.sized(), browserLogin(ctx, a.URL, name, "password123"))
		queueAPI := fmt.Sprintf("/api/goods/%d/queue", g.ID)
		browse(t, ctx, "open the waiting room",
			chromedp.Navigate(fmt.Sprintf("%s/goods/%d/queue", a.URL, g.ID)),
			chromedp.WaitVisible(`[data-testid=queue-page][data-subscribed=on]`),
			chromedp.WaitVisible(`[data-testid=queue-join]`),
		)
		// The live socket is open and the page has read what it reads: no
		// request for a ticket the shopper does not have.
		until(t, ctx, "the live socket", `document.documentElement.dataset.live === "on"`)
		var asked int
		browse(t, ctx, "the page's requests", chromedp.Evaluate(fmt.Sprintf(
			`performance.getEntriesByType("resource").filter((e) => new URL(e.name).pathname === %q).length`, queueAPI), &asked))
		if asked != 0 {
			t.Fatalf("the page asked GET %s %d times before joining (each a 404)", queueAPI, asked)
		}

		// Before the start: in, with no number.
		browse(t, ctx, "join", chromedp.Click(`[data-testid=queue-join]`), chromedp.WaitVisible(`[data-testid=queue-unplaced]`))
		until(t, ctx, "no place before the start", isHidden(`[data-testid=queue-position]`))
		until(t, ctx, "the drawn-at-the-start line", pageSays("Places are drawn at random at the start"))
		for range 2 {
			tok, _ := a.newUser()
			if st, code, _ := a.joinQueue(tok, g.ID, ""); st != 201 {
				t.Fatalf("another shopper joins: %d %s", st, code)
			}
		}
		a.advance(2 * time.Second) // the room's tick tells the page of the joins
		until(t, ctx, "still no place after others joined", isHidden(`[data-testid=queue-position]`)+` && `+isHidden(`[data-testid=queue-progress]`))

		// The start: a place, then the turn. One a second is let in.
		a.advance(time.Minute)
		var pos string
		waitFor(t, ctx, "a place after the start", fmt.Sprintf(`(() => { const st = document.querySelector("[data-queue]").dataset.ticketState;
  return st === "admitted" ? "admitted" : %s; })()`, visibleText(`[data-testid=queue-position]`)), &pos)
		a.advance(5 * time.Second)
		browse(t, ctx, "admitted", chromedp.WaitVisible(`[data-testid=queue-grab]`))
		waitText(t, ctx, `[data-testid=queue-state]`, "Your turn")

		// The admission runs out unused: the turn passed, the room is open.
		a.advance(61 * time.Second)
		waitText(t, ctx, `[data-testid=queue-state]`, "Your turn passed")
		browse(t, ctx, "join again offered", chromedp.WaitVisible(`[data-testid=queue-join]`))
		waitText(t, ctx, `[data-testid=queue-join]`, "Join again")
		until(t, ctx, "no Grab button once the turn passed", isHidden(`[data-testid=queue-grab]`))
		until(t, ctx, "it says the turn passed unused", pageSays("Your turn passed unused"))
		until(t, ctx, "no claim that the units are gone", `!`+pageSays("every unit has gone"))
		waitText(t, ctx, fmt.Sprintf(`[data-testid=remaining-%d]`, g.ID), "5")
		// A reload says the same, from the server.
		browse(t, ctx, "reload", chromedp.Reload(), chromedp.WaitVisible(`[data-testid=queue-page]`))
		waitText(t, ctx, `[data-testid=queue-state]`, "Your turn passed")
		waitText(t, ctx, `[data-testid=queue-join]`, "Join again")

		// Join again, at the back; the turn comes; the grab wins.
		browse(t, ctx, "join again", chromedp.Click(`[data-testid=queue-join]`))
		a.advance(5 * time.Second)
		browse(t, ctx, "admitted again", chromedp.WaitVisible(`[data-testid=queue-grab]`), chromedp.Click(`[data-testid=queue-grab]`))
		browse(t, ctx, "the win", chromedp.WaitVisible(`[data-testid=queue-won] [data-testid=queue-order-link]`))
		waitText(t, ctx, `[data-testid=queue-state]`, "You got it")
		won := func(when string) {
			t.Helper()
			until(t, ctx, when+": no Grab button", isHidden(`[data-testid=queue-grab]`))
			until(t, ctx, when+": no admission countdown", isHidden(`[data-testid=queue-until]`)+` && !`+pageSays("It is your turn"))
			until(t, ctx, when+": no Join button", isHidden(`[data-testid=queue-join]`))
			until(t, ctx, when+": not closed", `!`+pageSays("every unit has gone")+` && !`+pageSays("Your turn passed"))
			var href string
			browse(t, ctx, when+": the order link", chromedp.AttributeValue(`[data-testid=queue-order-link]`, "href", &href, nil))
			if want := fmt.Sprintf("/orders/%d/checkout", a.ordersOf(name, g.ID)); href != want {
				t.Fatalf("%s: the order link %q, want %q", when, href, want)
			}
		}
		won("after the grab")
		a.advance(61 * time.Second) // the admission would have run out
		a.advance(time.Second)
		waitText(t, ctx, `[data-testid=queue-state]`, "You got it")
		won("after the admission's time")
		browse(t, ctx, "reload after the win", chromedp.Reload(), chromedp.WaitVisible(`[data-testid=queue-won]`))
		waitText(t, ctx, `[data-testid=queue-state]`, "You got it")
		won("after a reload")
	})
}

// ordersOf is the ID of the one order the shopper signed up as name holds of the goods.
func (a *testApp) ordersOf(name string, goodsID int64) int64 {
	a.T.Helper()
	var out struct{ Orders []orderJSON }
	if st := a.call("GET", "/api/me/orders", a.login(name, "password123"), nil, &out); st != 200 {
		a.T.Fatalf("my orders: %d", st)
	}
	var id int64
	for _, o := range out.Orders {
		if o.GoodsID == goodsID {
			if id != 0 {
				a.T.Fatalf("two orders of goods %d", goodsID)
			}
			id = o.ID
		}
	}
	if id == 0 {
		a.T.Fatalf("no order of goods %d", goodsID)
	}
	return id
}

// The front page's slot header turns with the injected clock (issue 35,
// point 4): "Coming up · starts in" before the start, "On sale now · ends
// in" at it, as the cards below turn "On sale"; the cards badge goods sold
// by waiting room or raffle, and only those.
func TestUXFrontPageBrowserSlotHeaderAtStart(t *testing.T) {
	forUXViewports(t, func(t *testing.T, v shopperViewport) {
		a := startApp(t)
		mt, _ := a.newMerchant()
		const startsIn = 10 * time.Minute
		sl := a.createSlot(mt, startsIn, time.Hour)
		plain := a.createGoods(mt, sl.ID, 5, 1)
		create := func(mode string) goodsJSON {
			var out struct{ Goods goodsJSON }
			body := map[string]any{"slot_id": sl.ID, "title": "UX " + mode, "price_cents": 10000, "seckill_price_cents": 2500,
				"stock": 3, "limit_per_user": 1, "mode": mode}
			if st := a.call("POST", "/api/admin/goods", mt, body, &out); st != 201 {
				t.Fatalf("create %s goods: %d", mode, st)
			}
			return out.Goods
		}
		queued, raffled := create("queue"), create("raffle")

		ctx := newBrowser(t)
		a.followClock(ctx)
		head := fmt.Sprintf(`[data-testid=home-slot-when-%d]`, sl.ID)
		browse(t, ctx, "open the front page", v.sized(),
			chromedp.Navigate(a.URL+"/"),
			chromedp.WaitVisible(fmt.Sprintf(`[data-testid=home-slot-%d][data-subscribed=on]`, sl.ID)),
			chromedp.WaitVisible(head),
		)
		until(t, ctx, "coming up before the start", fmt.Sprintf(`(() => { const t = %s; return t.includes("Coming up") && t.includes("starts in"); })()`, visibleText(head)))
		waitText(t, ctx, fmt.Sprintf(`[data-testid=mode-badge-%d]`, queued.ID), "Waiting room")
		waitText(t, ctx, fmt.Sprintf(`[data-testid=mode-badge-%d]`, raffled.ID), "Raffle")
		var plainBadge bool
		browse(t, ctx, "no badge on first-come goods", chromedp.Evaluate(fmt.Sprintf(`!!document.querySelector("[data-testid=mode-badge-%d]")`, plain.ID), &plainBadge))
		if plainBadge {
			t.Fatal("first-come goods carry a mode badge")
		}

		a.advance(startsIn)
		waitText(t, ctx, fmt.Sprintf(`[data-testid=home-state-%d]`, plain.ID), "On sale")
		until(t, ctx, "on sale now at the start", fmt.Sprintf(`(() => { const t = %s; return t.includes("On sale now") && t.includes("ends in") && !t.includes("starts in") && !t.includes("Coming up"); })()`, visibleText(head)))
		var line string
		browse(t, ctx, "the header's countdown", chromedp.Evaluate(fmt.Sprintf(`document.querySelector("%s .countdown").dataset.countdown`, head), &line))
		if end, err := time.Parse(time.RFC3339Nano, line); err != nil || !end.Equal(sl.EndAt) {
			t.Fatalf("the header counts down to %q, want the end %s", line, sl.EndAt)
		}
	})
}

// A raffle's leftovers are on sale first come, in the browser (issue 35,
// point 3): three units, two entries; after the draw the raffle page
// offers no "Log in to enter" to a visitor and links a shopper to the goods
// page, which says "1 left after the draw: first come, first served" above
// a working Grab button, and no "Enter the raffle".
func TestUXRaffleBrowserLeftovers(t *testing.T) {
	forUXViewports(t, func(t *testing.T, v shopperViewport) {
		a := startApp(t)
		_, g := a.raffleGoods(3, 10*time.Minute)
		for range 2 {
			tok, _ := a.newUser()
			a.enterRaffle(tok, g.ID, 201)
		}
		a.advance(10 * time.Minute)
		if _, err := a.Fair.DrawRaffle(context.Background(), g.ID); err != nil {
			t.Fatal(err)
		}
		a.advance(time.Second) // the gate reads the raffle at most once a second

		ctx := newBrowser(t)
		a.followClock(ctx)
		raffleSteps(t, ctx, "a visitor on the raffle page", v.sized(),
			chromedp.Navigate(fmt.Sprintf("%s/goods/%d/raffle", a.URL, g.ID)),
			chromedp.WaitVisible(`[data-testid=raffle-leftovers]`),
		)
		until(t, ctx, "no 'Log in to enter' once entries closed", isHidden(`[data-testid=login-to-enter]`))
		until(t, ctx, "the leftovers line", pageSays("1 left after the draw: first come, first served"))

		name, _ := a.register("leftover")
		raffleSteps(t, ctx, "log in and follow the raffle page to the goods", browserLogin(ctx, a.URL, name, "password123"),
			chromedp.Navigate(fmt.Sprintf("%s/goods/%d/raffle", a.URL, g.ID)),
			chromedp.WaitVisible(`[data-testid=raffle-leftovers-link]`),
			chromedp.Click(`[data-testid=raffle-leftovers-link]`),
			chromedp.WaitVisible(`[data-testid=goods-page]`),
			chromedp.WaitVisible(`[data-testid=raffle-leftovers]`),
		)
		until(t, ctx, "the goods page says so", pageSays("1 left after the draw: first come, first served"))
		until(t, ctx, "no 'Enter the raffle'", isHidden(`[data-testid=raffle-link]`)+` && !`+pageSays("Enter the raffle"))
		raffleSteps(t, ctx, "grab the unit left",
			chromedp.WaitEnabled(`[data-testid=grab-button]`),
			chromedp.Click(`[data-testid=grab-button]`),
			chromedp.WaitVisible(`[data-testid=grab-success]`),
		)
		waitText(t, ctx, fmt.Sprintf(`[data-testid=remaining-%d]`, g.ID), "0")
		if s := a.stats(a.adminToken(), g.ID); s.Unpaid != 3 {
			t.Fatalf("%d unpaid orders, want 3 (two winners, one leftover)", s.Unpaid)
		}
	})
}
