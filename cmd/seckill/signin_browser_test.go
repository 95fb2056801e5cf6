package main

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/seckill/seckill/tasks"
)

// A new shopper follows "Log in to grab", then "Create an account", signs
// up and lands back on the item, signed in. At the desktop and the phone size.
func TestSigninBrowserSignUpFromLogInToGrab(t *testing.T) {
	forViewports(t, testSigninBrowserSignUpFromLogInToGrab)
}

func testSigninBrowserSignUpFromLogInToGrab(t *testing.T, v shopperViewport) {
	a := startApp(t)
	_, g := a.liveGoods(5, 1)
	name := fmt.Sprintf("newbie%d", userSeq.Add(1))
	ctx := newBrowser(t)
	var path string
	browse(t, ctx, "size", v.sized())
	browse(t, ctx, "sign up from the item",
		chromedp.Navigate(fmt.Sprintf("%s/goods/%d", a.URL, g.ID)),
		chromedp.WaitVisible(`[data-testid=login-to-grab]`),
		chromedp.Click(`[data-testid=login-to-grab]`),
		chromedp.WaitVisible(`[data-testid=login-form]`),
		chromedp.Click(`[data-testid=register-link]`),
		chromedp.WaitVisible(`[data-testid=register-form]`),
		chromedp.SendKeys(`[data-testid=register-username]`, name),
		chromedp.SendKeys(`[data-testid=register-password]`, "password123"),
		chromedp.Click(`[data-testid=register-submit]`),
		chromedp.WaitVisible(`[data-testid=grab-button]`),
		chromedp.Evaluate(`location.pathname`, &path),
	)
	if path != fmt.Sprintf("/goods/%d", g.ID) {
		t.Fatalf("sign-up landed on %q, want the item", path)
	}
	waitText(t, ctx, `[data-testid=whoami]`, name)
}

// A locked sign-in is shown on the form with a countdown from Retry-After:
// the button stays off while it runs and comes back when it ends.
func TestSigninBrowserLockoutCountdown(t *testing.T) {
	a := startApp(t)
	name, _ := a.register("lockb")
	wrong := url.Values{"username": {name}, "password": {"wrong-password"}}
	for i := 1; i <= 5; i++ { // the 5th locks for a second
		postAuthForm(t, a, "/login", wrong)
	}
	a.advance(2 * time.Second)
	postAuthForm(t, a, "/login", wrong) // the 6th: two seconds
	a.advance(3 * time.Second)

	ctx := newBrowser(t)
	browse(t, ctx, "the 7th wrong password",
		chromedp.Navigate(a.URL+"/login"),
		chromedp.WaitVisible(`[data-testid=login-form]`),
		chromedp.SendKeys(`[data-testid=login-username]`, name),
		chromedp.SendKeys(`[data-testid=login-password]`, "wrong-password"),
		chromedp.Click(`[data-testid=login-submit]`),
		chromedp.WaitVisible(`[data-testid=lockout]`),
	)
	var first struct {
		Total, Left int
		Disabled    bool
		Name        string
	}
	browse(t, ctx, "read the lockout", chromedp.Evaluate(`({
		total: Number(document.querySelector('[data-lockout]').dataset.lockout),
		left: Number(document.querySelector('[data-lockout-seconds]')?.textContent ?? 0),
		disabled: document.querySelector('[data-testid=login-submit]').disabled,
		name: document.querySelector('[data-testid=login-username]').value,
	})`, &first))
	if first.Total != 4 || first.Name != name || (first.Left > 0 && !first.Disabled) {
		t.Fatalf("lockout on the form: %+v, want 4 s with the name kept and the button off while counting", first)
	}
	// The countdown runs down and gives the button back.
	browse(t, ctx, "the countdown ends",
		chromedp.WaitVisible(`[data-testid=lockout][data-lockout-done="1"]`),
		chromedp.WaitEnabled(`[data-testid=login-submit]`),
	)
}

// Opening the inbox reads it: the badge in the navigation clears there and
// stays cleared on the next page.
func TestSigninBrowserInboxBadgeClears(t *testing.T) {
	a := startApp(t)
	merchant, _ := a.newMerchant()
	now := a.Clock.Now()
	later := a.couponCreate(merchant, "Badge later", 10, 1, now.Add(2*time.Hour), now.Add(3*time.Hour))
	name, token := a.register("inbox")
	if st := a.call("PUT", fmt.Sprintf("/api/coupons/%d/reminders", later.ID), token, map[string]any{"minutes_before": 10, "channel": "app"}, nil); st != 200 {
		t.Fatalf("book: %d", st)
	}
	if err := a.Coupons.SendReminders(context.Background(), tasks.CouponRemindPayload{CouponID: later.ID, GrabStartAt: later.GrabStartAt, MinutesBefore: 10}); err != nil {
		t.Fatal(err)
	}
	ctx := newBrowser(t)
	browse(t, ctx, "log in", browserLogin(ctx, a.URL, name, "password123"))
	browse(t, ctx, "the badge counts it", chromedp.WaitVisible(tid("unread-badge")))
	waitText(t, ctx, tid("unread-badge"), "1")
	browse(t, ctx, "open the inbox",
		chromedp.Click(tid("nav-inbox")),
		chromedp.WaitVisible(`[data-testid=notifications] li.unread`), // the new one still marked on the page
		chromedp.WaitReady(`html[data-unread-checked]`),
		chromedp.WaitNotVisible(tid("unread-badge")),
	)
	var unread struct{ Unread int }
	if st := a.call("GET", "/api/me/notifications/unread", token, nil, &unread); st != 200 || unread.Unread != 0 {
		t.Fatalf("after opening the inbox: %d unread (%d)", unread.Unread, st)
	}
	var shown bool
	browse(t, ctx, "the next page",
		chromedp.Navigate(a.URL+"/coupons"),
		chromedp.WaitReady(`html[data-unread-checked]`),
		chromedp.Evaluate(`document.querySelector('[data-unread-badge]').offsetParent !== null`, &shown),
	)
	if shown {
		t.Fatal("the badge is back on the next page")
	}
}
