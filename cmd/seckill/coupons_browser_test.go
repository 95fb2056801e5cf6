package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
	"github.com/seckill/seckill/tasks"
)

func tid(parts ...any) string {
	s := make([]string, len(parts))
	for i, p := range parts {
		s[i] = fmt.Sprint(p)
	}
	return fmt.Sprintf(`[data-testid="%s"]`, strings.Join(s, "-"))
}

// A shopper books a reminder in the picker and sees it listed, sees the
// inbox badge count it when it is sent, and grabs a live coupon and finds it
// in "my coupons".
func TestCouponsBrowser(t *testing.T) {
	ctx := newBrowser(t)
	a := startApp(t)
	merchant, _ := a.newMerchant()
	now := a.Clock.Now()
	later := a.couponCreate(merchant, "Browser later", 10, 1, now.Add(2*time.Hour), now.Add(3*time.Hour))
	live := a.couponCreate(merchant, "Browser now", 10, 1, now.Add(-time.Minute), now.Add(time.Hour))
	name := fmt.Sprintf("shopper_b%d", userSeq.Add(1))
	if st := a.call("POST", "/api/auth/register", "", map[string]string{"username": name, "password": "password123"}, nil); st != 201 {
		t.Fatalf("register: %d", st)
	}

	err := chromedp.Run(ctx,
		browserLogin(ctx, a.URL, name, "password123"),
		chromedp.Navigate(a.URL+"/coupons"),
		chromedp.WaitVisible(tid("coupon", later.ID)),
		chromedp.Click(tid("picker-open", later.ID)),
		chromedp.WaitVisible(tid("remind-lead", later.ID)),
		chromedp.SetValue(tid("remind-lead", later.ID), "10"),
		chromedp.WaitVisible(tid("remind-channel", later.ID, "app")),
		chromedp.Click(tid("remind-book", later.ID)),
		chromedp.WaitVisible(tid("reminder", later.ID, 10, "app")),
	)
	if err != nil {
		t.Fatalf("book in the picker: %v", err)
	}
	var smsOffered bool
	if err := chromedp.Run(ctx, chromedp.Evaluate(fmt.Sprintf(`document.querySelector(%q) !== null`, tid("remind-channel", later.ID, "sms")), &smsOffered)); err != nil || smsOffered {
		t.Fatalf("sms offered without a provider (%v)", err)
	}
	var listed string
	err = chromedp.Run(ctx,
		chromedp.Navigate(a.URL+"/me/reminders"),
		chromedp.Text(tid("my-reminder", later.ID, 10, "app"), &listed, chromedp.ByQuery),
	)
	if err != nil || !strings.Contains(listed, "Browser later") || !strings.Contains(listed, "10 min before") {
		t.Fatalf("my reminders row = %q (%v)", listed, err)
	}

	// The reminder goes out now: the badge in the layout counts it live.
	var badge string
	var badgeShown bool
	err = chromedp.Run(ctx, chromedp.WaitReady(`html[data-live="on"]`), // the socket is up
		chromedp.Evaluate(`document.querySelector('[data-unread-badge]').offsetParent !== null`, &badgeShown))
	if err == nil && badgeShown {
		t.Fatal("the unread badge shows with nothing unread")
	}
	if err == nil {
		err = a.Coupons.SendReminders(context.Background(), tasks.CouponRemindPayload{CouponID: later.ID, GrabStartAt: later.GrabStartAt, MinutesBefore: 10})
	}
	if err == nil {
		err = chromedp.Run(ctx, chromedp.WaitVisible(tid("unread-badge")), chromedp.Text(tid("unread-badge"), &badge))
	}
	if err != nil || badge != "1" {
		t.Fatalf("unread badge = %q (%v), want 1", badge, err)
	}

	var result string
	err = chromedp.Run(ctx,
		chromedp.Navigate(a.URL+"/coupons"),
		chromedp.WaitEnabled(tid("grab", live.ID)),
		chromedp.Click(tid("grab", live.ID)),
		chromedp.WaitVisible(`[data-testid="to-my-coupons"]`),
		chromedp.Text(tid("grab-result", live.ID), &result),
	)
	if err != nil || !strings.Contains(result, "Got it") {
		t.Fatalf("grab result = %q (%v)", result, err)
	}
	// The coupon reaches "my coupons" once the batch flush has run: reload
	// until it does, for as long as the test's context lasts.
	for {
		var nodes []*cdp.Node
		if err := chromedp.Run(ctx, chromedp.Navigate(a.URL+"/me/coupons"), chromedp.WaitReady("main"),
			chromedp.Nodes(tid("my-coupon", live.ID), &nodes, chromedp.AtLeast(0))); err != nil {
			t.Fatalf("the grabbed coupon never showed in my coupons: %v", err)
		}
		if len(nodes) == 1 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	var row string
	chromedp.Run(ctx, chromedp.Text(tid("my-coupon", live.ID), &row))
	if !strings.Contains(row, "Browser now") || !strings.Contains(row, "Unused") { // badges read "Unused", "Live" everywhere
		t.Fatalf("my coupons row = %q", row)
	}
}

// A merchant's form shows each problem beside its field (in the browser,
// then from the server), and a valid template lands on its figures page and
// in the list.
func TestCouponsAdminBrowser(t *testing.T) {
	ctx := newBrowser(t)
	a := startApp(t)
	name := fmt.Sprintf("merchant_b%d", userSeq.Add(1))
	if st := a.call("POST", "/api/admin/users", a.adminToken(), map[string]string{"username": name, "password": "password123", "role": "merchant"}, nil); st != 201 {
		t.Fatalf("create merchant: %d", st)
	}
	// datetime-local fields hold the browser's local time.
	var offset int
	if err := chromedp.Run(ctx, browserLogin(ctx, a.URL, name, "password123"), chromedp.Evaluate(`new Date().getTimezoneOffset()`, &offset)); err != nil {
		t.Fatal(err)
	}
	local := func(d time.Duration) string {
		return a.Clock.Now().Add(d).UTC().Add(-time.Duration(offset) * time.Minute).Format("2006-01-02T15:04")
	}
	start, end, newStart, newEnd := local(time.Hour), local(3*time.Hour), local(3*time.Hour), local(5*time.Hour)
	var clientErr, serverErr, title, moved string
	err := chromedp.Run(ctx,
		chromedp.Navigate(a.URL+"/admin/coupons"),
		chromedp.WaitVisible(`[data-testid="coupon-form"]`),
		chromedp.SetValue(`[data-testid="coupon-title"]`, "Form coupon"),
		chromedp.SetValue(`[data-testid="coupon-value"]`, "abc"),
		chromedp.SetValue(`[data-testid="coupon-stock"]`, "50"),
		chromedp.SetValue(`[data-testid="coupon-start"]`, start),
		chromedp.SetValue(`[data-testid="coupon-end"]`, end),
		chromedp.Click(`[data-testid="coupon-submit"]`),
		chromedp.WaitVisible(`[data-testid="error-value"]`),
		chromedp.Text(`[data-testid="error-value"]`, &clientErr),
		// Passes the browser's checks, not the server's: more off than the minimum spend.
		chromedp.SetValue(`[data-testid="coupon-value"]`, "30"),
		chromedp.SetValue(`[data-testid="coupon-min-spend"]`, "20"),
		chromedp.Click(`[data-testid="coupon-submit"]`),
		chromedp.WaitVisible(`[data-testid="form-error"]`),
		chromedp.Text(`[data-testid="error-value"]`, &serverErr),
		chromedp.SetValue(`[data-testid="coupon-min-spend"]`, "100"),
		chromedp.Click(`[data-testid="coupon-submit"]`),
		chromedp.WaitVisible(`[data-testid="bookings"]`),
		// Move the window two hours later from the figures page.
		chromedp.SetValue(`[data-testid="window-form"] [name="grab_start_at"]`, newStart),
		chromedp.SetValue(`[data-testid="window-form"] [name="grab_end_at"]`, newEnd),
		chromedp.Evaluate(`document.querySelector('[data-testid="flash"]')?.remove()`, nil), // the creation's flash
		chromedp.Click(`[data-testid="window-form"] button`),
		chromedp.WaitVisible(`[data-testid="flash-window"]`), // beside the window form
		chromedp.Text(`[data-testid="flash-window"]`, &moved),
		chromedp.Navigate(a.URL+"/admin/coupons"),
		chromedp.Text(`[data-testid="admin-coupons"]`, &title),
	)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(moved, "moved") || !strings.Contains(clientErr, "amount") || !strings.Contains(serverErr, "minimum spend") || !strings.Contains(title, "Form coupon") {
		t.Fatalf("client error %q, server error %q, move %q, list %q", clientErr, serverErr, moved, title)
	}
	var list struct{ Coupons []couponJSON }
	a.call("GET", "/api/coupons", "", nil, &list)
	if len(list.Coupons) != 1 || list.Coupons[0].Value != 3000 || list.Coupons[0].MinSpendCents != 10000 || list.Coupons[0].Stock != 50 ||
		list.Coupons[0].GrabStartAt.UTC().Add(-time.Duration(offset)*time.Minute).Format("2006-01-02T15:04") != newStart {
		t.Fatalf("created %+v", list.Coupons)
	}
}
