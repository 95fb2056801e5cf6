package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/seckill/seckill/tasks"
)

// A shopper books "Remind me" on an upcoming goods page (a lead time whose
// time has passed cannot be chosen), cancels one, finds the other on My
// reminders, and, when the app's clock reaches the remind time and the task
// runs, sees the reminder arrive live on the goods page and in the badge.
func TestGoodsRemindBrowser(t *testing.T) {
	ctx := newBrowser(t)
	a := startApp(t)
	merchant, _ := a.newMerchant()
	sl := a.createSlot(merchant, 30*time.Minute+30*time.Second, time.Hour)
	g := a.createGoods(merchant, sl.ID, 10, 1)
	name := fmt.Sprintf("shopper_r%d", userSeq.Add(1))
	if st := a.call("POST", "/api/auth/register", "", map[string]string{"username": name, "password": "password123"}, nil); st != 201 {
		t.Fatalf("register: %d", st)
	}
	page := fmt.Sprintf("%s/goods/%d", a.URL, g.ID)
	// The same picker as the coupon centre's: a list of lead times, the
	// channels offered, Remind me; each reminder listed with its Cancel.
	lead := tid("goods-remind-lead", g.ID)
	book := func(minutes int) chromedp.Action {
		return chromedp.Tasks{chromedp.SetValue(lead, fmt.Sprint(minutes), chromedp.ByQuery), chromedp.Click(tid("goods-remind-book", g.ID), chromedp.ByQuery)}
	}
	offered := func(minutes int) string {
		return fmt.Sprintf(`document.querySelector('%s option[value="%d"]') !== null`, lead, minutes)
	}
	item := func(minutes int) string { return tid("goods-reminder", g.ID, minutes, "app") }

	err := chromedp.Run(ctx,
		browserLogin(ctx, a.URL, name, "password123"),
		chromedp.Navigate(page),
		chromedp.WaitVisible(`[data-testid=goods-remind][data-ready="1"]`),
		chromedp.Click(tid("goods-picker-open", g.ID), chromedp.ByQuery),
		book(10),
		chromedp.WaitVisible(item(10), chromedp.ByQuery),
		book(5),
		chromedp.WaitVisible(item(5), chromedp.ByQuery),
		chromedp.Click(tid("goods-reminder-cancel", g.ID, 5, "app"), chromedp.ByQuery),
		chromedp.WaitNotPresent(item(5), chromedp.ByQuery),
	)
	if err != nil {
		t.Fatalf("book and cancel on the goods page: %v", err)
	}
	var late, open, email bool
	err = chromedp.Run(ctx,
		chromedp.Evaluate(offered(35), &late),
		chromedp.Evaluate(offered(30), &open),
		chromedp.Evaluate(fmt.Sprintf(`document.querySelector('[data-testid="goods-remind-channel-%d-email"]') !== null`, g.ID), &email))
	if err != nil || late || !open || email {
		t.Fatalf("35 minutes offered %v (want false), 30 minutes offered %v (want true), email offered %v (want false): %v", late, open, email, err)
	}
	var booked string
	if err := chromedp.Run(ctx, chromedp.Reload(), chromedp.WaitVisible(`[data-testid=goods-remind][data-ready="1"]`),
		chromedp.Text(tid("goods-reminder-list", g.ID), &booked, chromedp.ByQuery)); err != nil || !strings.Contains(booked, "10 min before") || strings.Contains(booked, "5 min") {
		t.Fatalf("after a reload the page lists %q (%v)", booked, err)
	}

	var row string
	err = chromedp.Run(ctx,
		chromedp.Navigate(a.URL+"/me/reminders"),
		chromedp.Text(tid("my-goods-reminder", g.ID, 10, "app"), &row, chromedp.ByQuery),
	)
	if err != nil || !strings.Contains(row, g.Title) || !strings.Contains(row, "10 min before") {
		t.Fatalf("my reminders row = %q (%v)", row, err)
	}

	// A reminder booked elsewhere (the API) is cancelled from My reminders.
	token := a.login(name, "password123")
	a.goodsRemind("PUT", token, g.ID, 20, "app")
	row20 := tid("my-goods-reminder", g.ID, 20, "app")
	err = chromedp.Run(ctx, chromedp.Navigate(a.URL+"/me/reminders"), chromedp.WaitVisible(row20),
		chromedp.Click(row20+" button", chromedp.ByQuery), chromedp.WaitNotPresent(row20))
	if err != nil {
		t.Fatalf("cancel on My reminders: %v", err)
	}
	if got, want := leads(a.goodsRemind("GET", token, g.ID, 0, "")), leadsAt(sl.StartAt, 10); got != want {
		t.Fatalf("after cancelling on My reminders %q, want %q", got, want)
	}

	// The remind time comes on the app's clock; the worker runs the due task.
	a.followClock(ctx)
	if err := chromedp.Run(ctx, chromedp.Navigate(page), chromedp.WaitVisible(`[data-testid=goods-remind][data-ready="1"]`),
		chromedp.WaitReady(`html[data-live="on"]`)); err != nil {
		t.Fatal(err)
	}
	remindAt := sl.StartAt.Add(-10 * time.Minute)
	a.advance(remindAt.Sub(a.Clock.Now()))
	info := a.goodsRemindTask(g.ID, sl.StartAt, 10)
	if info == nil {
		t.Fatal("no fan-out task")
	}
	if err := a.Backend.Queue.RunTask(tasks.GoodsRemindQueue, info.ID); err != nil {
		t.Fatal(err)
	}
	var arrived, badge string
	err = chromedp.Run(ctx,
		chromedp.WaitVisible(`[data-testid=remind-arrived]`),
		chromedp.Text(`[data-testid=remind-arrived]`, &arrived, chromedp.ByQuery),
		chromedp.WaitVisible(tid("unread-badge")), chromedp.Text(tid("unread-badge"), &badge, chromedp.ByQuery),
	)
	if err != nil || !strings.Contains(arrived, g.Title) || !strings.Contains(arrived, "10 minutes") || badge != "1" {
		t.Fatalf("arrived %q, badge %q (%v)", arrived, badge, err)
	}
	// Once the sale starts, there is nothing left to be reminded of.
	a.advance(10 * time.Minute)
	if err := chromedp.Run(ctx, chromedp.WaitNotVisible(`[data-testid=goods-remind]`)); err != nil {
		t.Fatalf("Remind me still shows once the sale started: %v", err)
	}
	var href string
	var ok bool
	err = chromedp.Run(ctx, chromedp.Navigate(a.URL+"/me/notifications"),
		chromedp.AttributeValue(`[data-testid^=notification-goods-]`, "href", &href, &ok, chromedp.ByQuery))
	if err != nil || href != fmt.Sprintf("/goods/%d", g.ID) {
		t.Fatalf("the inbox links to %q, want the goods (%v)", href, err)
	}
}
