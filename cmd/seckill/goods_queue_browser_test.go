package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// A shopper walks through a waiting room in the browser: from the goods
// page's "Join the queue" to the room, joins with a proof of work before the
// start, behind three others, watches the position and the wait move live
// after the start, is admitted, and wins the grab from the room's Grab
// button (X-Admission and X-Pow). The merchant's page shows the room live.
func TestQueueBrowserWaitingRoom(t *testing.T) {
	a := startApp(t)
	_, g := a.queueGoods(5, 1, time.Minute, map[string]any{"pow_bits": 6})
	for range 3 {
		tok, _ := a.newUser()
		if st, code, _ := a.joinQueue(tok, g.ID, solve(t, a.powChallenge(tok, g.ID))); st != 201 {
			t.Fatalf("another shopper joins: %d %s", st, code)
		}
	}
	name, _ := a.register("queuer")
	ctx := newBrowser(t)
	// SCREENSHOTS=docs/screenshots keeps the room's pictures (as TestScreenshots does).
	shot := func(file string) {
		dir := os.Getenv("SCREENSHOTS")
		if dir == "" {
			return
		}
		if !filepath.IsAbs(dir) {
			dir = filepath.Join("..", "..", dir)
		}
		var png []byte
		browse(t, ctx, "screenshot "+file, chromedp.FullScreenshot(&png, 100))
		if err := os.WriteFile(filepath.Join(dir, file), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a.followClock(ctx)
	browse(t, ctx, "log in", browserLogin(ctx, a.URL, name, "password123"))
	browse(t, ctx, "from the goods page to the waiting room",
		chromedp.Navigate(fmt.Sprintf("%s/goods/%d", a.URL, g.ID)),
		chromedp.WaitVisible(`[data-testid=join-queue-link]`),
		chromedp.Click(`[data-testid=join-queue-link]`),
		chromedp.WaitVisible(`[data-testid=queue-page]`),
		chromedp.WaitVisible(`[data-testid=queue-join]`),
	)
	waitText(t, ctx, `[data-testid=queue-state]`, "Not in the queue")
	browse(t, ctx, "join the queue", chromedp.Click(`[data-testid=queue-join]`), chromedp.WaitVisible(`[data-testid=queue-unplaced]`))
	waitText(t, ctx, `[data-testid=queue-state]`, "Waiting") // before the start: no place, they are drawn then
	if tk := a.ticketOf(name, g.ID); tk.State != "waiting" {
		t.Fatalf("the server's ticket: %+v", tk)
	}

	// The start shuffles the four; the page hears its place, then its turn.
	a.advance(time.Minute)
	var pos string
	// (the first place may be let in at once: admitted is as good)
	var placed string
	waitFor(t, ctx, "a place after the start", `(() => { const p = document.querySelector("[data-testid=queue-progress]");
  return document.querySelector("[data-queue]").dataset.ticketState === "admitted" || (p && p.offsetParent !== null) ? "yes" : ""; })()`, &placed)
	shot("queue-waiting.png")
	waitFor(t, ctx, "the place after the shuffle", `(() => { const p = document.querySelector("[data-testid=queue-position]").innerText; return document.querySelector("[data-queue]").dataset.ticketState === "admitted" || p !== "–" ? p : ""; })()`, &pos)
	a.advance(10 * time.Second)
	browse(t, ctx, "admitted",
		chromedp.WaitVisible(`[data-testid=queue-admitted]`),
		chromedp.WaitVisible(`[data-testid=queue-grab]`),
	)
	waitText(t, ctx, `[data-testid=queue-state]`, "Your turn")
	shot("queue-admitted.png")
	var result string
	browse(t, ctx, "grab at one's turn", chromedp.Click(`[data-testid=queue-grab]`))
	waitFor(t, ctx, "the grab's answer", `(() => { const e = document.querySelector("[data-testid=grab-success], [data-testid=grab-error]"); return e ? e.dataset.testid + " " + e.innerText : ""; })()`, &result)
	if !strings.HasPrefix(result, "grab-success") {
		t.Fatalf("the grab at one's turn: %q", result)
	}
	if s := a.stats(a.adminToken(), g.ID); s.Unpaid != 1 {
		t.Fatalf("%d unpaid orders, want 1", s.Unpaid)
	}

	// The merchant's page (as the admin, in a browser of its own: the
	// shopper's session stays out of it) shows the room.
	ctx = newBrowser(t)
	browse(t, ctx, "the merchant's view", browserLogin(ctx, a.URL, a.Config.AdminUsername, testAdminPassword),
		chromedp.Navigate(fmt.Sprintf("%s/admin/goods/%d", a.URL, g.ID)),
		chromedp.WaitVisible(`[data-testid=queue-panel]`),
	)
	waitText(t, ctx, `[data-testid=queue-joined]`, "4")
	var admitted string
	waitFor(t, ctx, "admitted count", `document.querySelector("[data-testid=queue-admitted-count]").innerText.replace("–", "")`, &admitted)
	if n, _ := strconv.Atoi(admitted); n != 4 {
		t.Fatalf("the merchant sees %q admitted, want 4", admitted)
	}
	waitText(t, ctx, `[data-testid=queue-rate]`, "1")
	shot("queue-merchant.png")
}

// ticketOf reads the ticket of the shopper signed up as name.
func (a *testApp) ticketOf(name string, goodsID int64) ticketJSON {
	a.T.Helper()
	_, _, tk := a.queueRequest("GET", a.login(name, "password123"), goodsID, "")
	return tk
}
