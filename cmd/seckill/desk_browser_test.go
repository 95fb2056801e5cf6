package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// A merchant, at desktop and at phone width, opens the orders desk from the
// dashboard, finds an order by its number and by the start of its
// shopper's name, refunds it with a reason after a confirmation page, sees
// it refunded with its history, and finds the refund and its reason in the
// audit log. The page is never wider than the phone.
func TestDeskBrowser(t *testing.T) {
	a := startApp(t)
	name := fmt.Sprintf("deskm%d", userSeq.Add(1))
	if st := a.call("POST", "/api/admin/users", a.adminToken(), map[string]string{"username": name, "password": "password123", "role": "merchant"}, nil); st != 201 {
		t.Fatalf("create merchant: %d", st)
	}
	mt := a.login(name, "password123")
	sl := a.createSlot(mt, -time.Minute, time.Hour)
	g := a.createGoods(mt, sl.ID, 20, 5)

	ctx := newBrowser(t)
	browse(t, ctx, "log in", browserLogin(ctx, a.URL, name, "password123"))
	for i, size := range []struct {
		name string
		w, h int64
	}{{"desktop", 1366, 900}, {"phone", 390, 844}} {
		t.Run(size.name, func(t *testing.T) {
			tag := fmt.Sprintf("b%d%d", time.Now().UnixNano()%1e6, i)
			shopper, _ := a.registerAs(tag + "_carol")
			other, _ := a.registerAs(tag + "_dave")
			paid := a.grab(shopper, g.ID)
			if st, _ := a.pay(shopper, paid.ID, 0); st != 200 {
				t.Fatalf("pay: %d", st)
			}
			unpaid := a.grab(shopper, g.ID)
			a.grab(other, g.ID)
			eventually(t, 15*time.Second, "the desk to list the shopper's paid order", func() bool {
				p := a.desk(mt, url.Values{"q": {tag + "_carol"}, "status": {"paid"}})
				return len(p.Orders) == 1
			})
			number := fmt.Sprintf("G%d-%04d", g.ID, paid.ID%1_000_000_000)
			row := func(id int64) string { return fmt.Sprintf(`[data-testid=desk-order-%d]`, id) }
			var rows int
			var gone bool

			browse(t, ctx, "open the desk from the dashboard",
				chromedp.EmulateViewport(size.w, size.h),
				chromedp.Navigate(a.URL+"/admin/"),
				chromedp.Click(`[data-testid=orders-link]`, chromedp.NodeVisible),
				chromedp.WaitVisible(`[data-testid=desk-search]`),
			)
			browse(t, ctx, "search by number",
				setField(`[data-testid=desk-q]`, "#"+number),
				chromedp.Submit(`[data-testid=desk-q]`),
				chromedp.WaitVisible(row(paid.ID)),
				chromedp.Evaluate(`document.querySelectorAll("[data-testid=desk-orders] tbody tr").length`, &rows),
			)
			if rows != 1 {
				t.Fatalf("search by number lists %d orders, want 1", rows)
			}
			waitText(t, ctx, row(paid.ID)+` [data-testid=desk-number]`, "#"+number)
			browse(t, ctx, "filter by goods and status",
				setField(`[data-testid=desk-q]`, ""),
				setField(`[data-testid=desk-goods]`, fmt.Sprint(g.ID)),
				setField(`[data-testid=desk-status]`, "unpaid"),
				chromedp.Submit(`[data-testid=desk-q]`),
				chromedp.WaitVisible(row(unpaid.ID)),
				chromedp.Evaluate(fmt.Sprintf(`document.querySelector(%q) === null`, row(paid.ID)), &gone),
			)
			if !gone {
				t.Fatal("the paid order is listed under status unpaid")
			}
			browse(t, ctx, "search by the start of the username",
				setField(`[data-testid=desk-q]`, strings.ToUpper(tag+"_ca")),
				setField(`[data-testid=desk-goods]`, ""),
				setField(`[data-testid=desk-status]`, ""),
				chromedp.Submit(`[data-testid=desk-q]`),
				chromedp.WaitVisible(row(unpaid.ID)),
				chromedp.WaitVisible(row(paid.ID)),
				chromedp.Evaluate(`document.querySelectorAll("[data-testid=desk-orders] tbody tr").length`, &rows),
			)
			if rows != 2 {
				t.Fatalf("search by username lists %d orders, want carol's 2", rows)
			}
			// The export beside the filters downloads what they show: carol's two
			// orders, in the reader's form (headers in words, the browser's zone).
			var csv string
			browse(t, ctx, "the desk's export", chromedp.WaitVisible(`[data-testid=desk-csv]`),
				chromedp.Evaluate(`fetch(document.querySelector("[data-testid=desk-csv]").href).then(r => r.text())`, &csv,
					func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
			lines := strings.Split(strings.TrimSpace(csv), "\n")
			if len(lines) != 3 || !strings.HasPrefix(lines[0], "Order number,") || !strings.Contains(csv, "\n"+number+",") || !strings.Contains(csv, g.Title) {
				t.Fatalf("the desk's export of carol's search:\n%s", csv)
			}
			noWiderThanViewport(t, ctx, "the desk")
			shoot(t, ctx, "desk")

			browse(t, ctx, "open the order and ask to refund",
				chromedp.Click(row(paid.ID)+` [data-testid=desk-number]`, chromedp.NodeVisible),
				chromedp.WaitVisible(`[data-testid=order-history]`),
				chromedp.Click(`[data-testid=refund-start]`, chromedp.NodeVisible),
				chromedp.WaitVisible(`[data-testid=refund-form]`),
			)
			waitText(t, ctx, `[data-testid=order-status]`, "Paid")
			noWiderThanViewport(t, ctx, "the refund confirmation")
			// Keeping the order changes nothing.
			browse(t, ctx, "keep the order",
				chromedp.Click(`[data-testid=refund-cancel]`, chromedp.NodeVisible),
				chromedp.WaitVisible(`[data-testid=refund-start]`),
			)
			if got := a.order(shopper, paid.ID); got.Status != "paid" {
				t.Fatalf("after keeping the order it is %s", got.Status)
			}
			// Without a reason (the browser's own check taken away) the server
			// refuses it beside the form, in red, and nothing changes.
			browse(t, ctx, "refund without a reason",
				chromedp.Click(`[data-testid=refund-start]`, chromedp.NodeVisible),
				chromedp.WaitVisible(`[data-testid=refund-form]`),
				chromedp.Evaluate(`document.querySelector("[data-testid=refund-reason]").removeAttribute("required")`, nil),
				chromedp.Click(`[data-testid=refund-confirm]`, chromedp.NodeVisible),
				chromedp.WaitVisible(`[data-testid=refund-section] [data-testid=refund-error]`),
			)
			waitText(t, ctx, `[data-testid=refund-error]`, "The reason must be 1–200 characters.")
			shoot(t, ctx, "desk-refund")
			if got := a.order(shopper, paid.ID); got.Status != "paid" {
				t.Fatalf("after a refund without a reason the order is %s", got.Status)
			}
			reason := "Parcel lost in transit (" + size.name + ")"
			browse(t, ctx, "refund with a reason",
				chromedp.WaitVisible(`[data-testid=refund-form]`),
				chromedp.SendKeys(`[data-testid=refund-reason]`, reason),
				chromedp.Click(`[data-testid=refund-confirm]`, chromedp.NodeVisible),
				chromedp.WaitVisible(`[data-testid=refund-done]`),
			)
			waitText(t, ctx, `[data-testid=order-status]`, "Refunded")
			waitText(t, ctx, `[data-testid=history-refunded] [data-testid=history-detail]`, reason)
			waitText(t, ctx, `[data-testid=history-refunded] [data-testid=history-actor]`, "merchant "+name)
			noWiderThanViewport(t, ctx, "the refunded order")
			shoot(t, ctx, "desk-order")
			if got := a.order(shopper, paid.ID); got.Status != "refunded" {
				t.Fatalf("after the refund the shopper's order is %s", got.Status)
			}

			var detail string
			browse(t, ctx, "find the refund in the audit log",
				chromedp.Navigate(a.URL+"/admin/audit"),
				chromedp.WaitVisible(`[data-testid=audit-log]`),
				chromedp.Evaluate(fmt.Sprintf(`[...document.querySelectorAll("[data-testid=audit-log] tbody tr")]
					.filter(r => r.querySelector("[data-testid=audit-action]").title === "order.refund" &&
						r.querySelector("[data-testid=audit-target]").title === "order:%d")
					.map(r => r.innerText).join("\n")`, paid.ID), &detail),
			)
			if !strings.Contains(detail, reason) || strings.Count(detail, "Refunded order") != 1 {
				t.Fatalf("audit rows of the refund %q, want one with the reason %q", detail, reason)
			}
		})
	}
}

// noWiderThanViewport fails when the page scrolls sideways.
func noWiderThanViewport(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	var over int
	browse(t, ctx, "measure "+what, chromedp.Evaluate(`document.documentElement.scrollWidth - window.innerWidth`, &over))
	if over > 0 {
		t.Fatalf("%s is %dpx wider than the viewport", what, over)
	}
}

// setField sets a form field's value, an empty one included.
func setField(sel, value string) chromedp.Action {
	return chromedp.Evaluate(fmt.Sprintf(`document.querySelector(%q).value = %q`, sel, value), nil)
}
