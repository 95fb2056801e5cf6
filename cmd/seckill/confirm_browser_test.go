package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/seckill/seckill/db/model"
)

// Paying ends on a receipt (number, goods, amount, discount, paid, coupon,
// time), reachable again from My orders; Refund there asks first on its own
// page, "Keep it" changes nothing, and the confirmed refund is answered
// beside the order in green. At the desktop and the phone size.
func TestConfirmBrowserReceiptAndRefund(t *testing.T) {
	forViewports(t, testConfirmBrowserReceiptAndRefund)
}

func testConfirmBrowserReceiptAndRefund(t *testing.T, v shopperViewport) {
	a := startApp(t)
	mt, g := a.liveGoods(3, 1) // 2500 cents
	off := a.couponTemplate(mt, "amount_off", 500, 2000, 7)
	name, token := a.register("receipt")
	uc := a.grabCoupon(token, off.ID)
	o := a.grab(token, g.ID)
	number := "#" + model.OrderNumber(o.ID)

	ctx := newBrowser(t)
	browse(t, ctx, "size", v.sized())
	browse(t, ctx, "log in", browserLogin(ctx, a.URL, name, "password123"))
	browse(t, ctx, "pay with the coupon",
		chromedp.Navigate(fmt.Sprintf("%s/orders/%d/checkout", a.URL, o.ID)),
		chromedp.WaitVisible(tid("coupon-option", uc.ID)),
		chromedp.Click(tid("coupon-option", uc.ID)),
		chromedp.Click(`[data-testid=checkout-pay]`),
		chromedp.WaitVisible(`[data-testid=receipt-page]`),
	)
	for sel, want := range map[string]string{
		"receipt-number": number, "receipt-goods": g.Title, "receipt-amount": "¥25.00",
		"receipt-discount": "−¥5.00", "receipt-paid": "¥20.00", "receipt-method": "In the app, with the coupon “" + off.Title + "”",
	} {
		waitText(t, ctx, tid(sel), want)
	}
	var paidAt string
	var ok bool
	browse(t, ctx, "the receipt's time", chromedp.AttributeValue(`[data-testid=receipt-time] time`, "datetime", &paidAt, &ok))
	if !ok || paidAt == "" {
		t.Fatal("the receipt shows no time of payment")
	}

	browse(t, ctx, "the receipt from My orders",
		chromedp.Navigate(a.URL+"/me/orders"),
		chromedp.WaitVisible(tid("receipt", o.ID)),
		chromedp.Click(tid("receipt", o.ID)),
		chromedp.WaitVisible(`[data-testid=receipt-page]`),
	)
	waitText(t, ctx, tid("receipt-number"), number)

	browse(t, ctx, "refund, then keep it",
		chromedp.Navigate(a.URL+"/me/orders"),
		chromedp.WaitVisible(tid("refund", o.ID)),
		chromedp.Click(tid("refund", o.ID)),
		chromedp.WaitVisible(`[data-testid=confirm-page]`),
	)
	waitText(t, ctx, tid("confirm-question"), "Refund order "+number+" for ¥20.00?")
	browse(t, ctx, "keep it", chromedp.Click(tid("confirm-no")), chromedp.WaitVisible(`[data-testid=orders-page]`))
	waitText(t, ctx, tid("order-status", o.ID), "Paid")
	if got := a.order(token, o.ID); got.Status != "paid" {
		t.Fatalf("Keep it changed the order: %q", got.Status)
	}
	browse(t, ctx, "refund, confirmed",
		chromedp.Click(tid("refund", o.ID)),
		chromedp.WaitVisible(`[data-testid=confirm-yes]`),
		chromedp.Click(tid("confirm-yes")),
		chromedp.WaitVisible(tid("flash-order", o.ID)),
	)
	waitText(t, ctx, tid("flash-order", o.ID), "Refunded ¥20.00.")
	waitText(t, ctx, tid("order-status", o.ID), "Refunded")
	var color, kind string
	browse(t, ctx, "the answer's colour",
		chromedp.Evaluate(fmt.Sprintf(`getComputedStyle(document.querySelector('[data-testid=flash-order-%d]')).color`, o.ID), &color),
		chromedp.AttributeValue(tid("flash-order", o.ID), "data-kind", &kind, &ok),
	)
	if kind != "success" || color != "rgb(23, 96, 58)" {
		t.Fatalf("the refund's answer is %q in %s, want a success in green", kind, color)
	}
}

// A picture upload that fails is answered beside the picture form in red,
// not as a green banner at the top of the page.
func TestConfirmBrowserUploadErrorBesideForm(t *testing.T) {
	a := startApp(t)
	name, mt := a.namedMerchant()
	sl := a.createSlot(mt, time.Hour, time.Hour)
	g := a.createGoods(mt, sl.ID, 3, 1)
	bad := filepath.Join(t.TempDir(), "not-a-picture.png")
	if err := os.WriteFile(bad, []byte("this is text, not a picture"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := newBrowser(t)
	browse(t, ctx, "log in", browserLogin(ctx, a.URL, name, "password123"))
	browse(t, ctx, "upload a file that is no picture",
		chromedp.Navigate(fmt.Sprintf("%s/admin/goods/%d", a.URL, g.ID)),
		chromedp.WaitVisible(`[data-testid=image-form]`),
		chromedp.SetUploadFiles(`[data-testid=image-input]`, []string{bad}),
		chromedp.Click(`[data-testid=image-submit]`),
		chromedp.WaitVisible(`[data-testid=image-form] [data-testid=flash-image]`),
	)
	var kind, color string
	var top, ok bool
	browse(t, ctx, "read the answer",
		chromedp.AttributeValue(`[data-testid=flash-image]`, "data-kind", &kind, &ok),
		chromedp.Evaluate(`getComputedStyle(document.querySelector('[data-testid=flash-image]')).color`, &color),
		chromedp.Evaluate(`document.querySelector('[data-testid=flash]') !== null`, &top),
	)
	if kind != "error" || color != "rgb(197, 48, 48)" || top {
		t.Fatalf("the upload's refusal is %q in %s (a banner at the top too: %v), want an error in red beside the form", kind, color, top)
	}
	// Saving the goods is answered beside its form, in green.
	browse(t, ctx, "save the goods",
		chromedp.Click(`[data-testid=goods-edit-submit]`),
		chromedp.WaitVisible(`[data-testid=goods-edit-form] [data-testid=flash-goods-edit]`),
		chromedp.Evaluate(`getComputedStyle(document.querySelector('[data-testid=flash-goods-edit]')).color`, &color),
	)
	waitText(t, ctx, tid("flash-goods-edit"), "Goods saved.")
	if color != "rgb(23, 96, 58)" {
		t.Fatalf("the save's answer is in %s, want green", color)
	}
}

// namedMerchant has the admin create a merchant (password "password123")
// and returns its name and token, for a browser to log in as.
func (a *testApp) namedMerchant() (name, token string) {
	a.T.Helper()
	name = fmt.Sprintf("shop%d", userSeq.Add(1))
	if st := a.call("POST", "/api/admin/users", a.adminToken(), map[string]string{"username": name, "password": "password123", "role": "merchant"}, nil); st != 201 {
		a.T.Fatalf("create merchant: %d", st)
	}
	return name, a.login(name, "password123")
}

// "End sale now" asks on the same kind of page as cancel and refund (no
// browser dialog), once: the question is the page's only sentence asking
// anything. "Keep it on sale" changes nothing; the confirmed end ends it.
// At the desktop and the phone size.
func TestConfirmBrowserEndSale(t *testing.T) {
	forViewports(t, func(t *testing.T, v shopperViewport) {
		a := startApp(t)
		name, mt := a.namedMerchant()
		sl := a.createSlot(mt, -time.Minute, time.Hour)
		g := a.createGoods(mt, sl.ID, 5, 1)
		ctx := newBrowser(t)
		browse(t, ctx, "size", v.sized())
		browse(t, ctx, "log in", browserLogin(ctx, a.URL, name, "password123"))
		ask := func(step string) {
			browse(t, ctx, step,
				chromedp.Navigate(fmt.Sprintf("%s/admin/goods/%d", a.URL, g.ID)),
				chromedp.WaitVisible(`[data-testid=end-now]`),
				chromedp.Click(`[data-testid=end-now]`),
				chromedp.WaitVisible(`[data-testid=confirm-page]`),
			)
		}
		ask("end sale now")
		waitText(t, ctx, tid("confirm-question"), "End the sale of “"+g.Title+"” now?")
		var questions int
		browse(t, ctx, "the page asks once", chromedp.Evaluate(`[...document.querySelectorAll('[data-testid=confirm-page] :is(h1,h2,p,strong)')].filter(e => e.textContent.includes('?')).length`, &questions))
		if questions != 1 {
			t.Fatalf("the confirm page asks %d times, want once", questions)
		}
		browse(t, ctx, "keep it on sale", chromedp.Click(tid("confirm-no")), chromedp.WaitVisible(`[data-testid=end-now]`))
		if st := a.call("POST", fmt.Sprintf("/api/goods/%d/grab", g.ID), mustUser(a), nil, nil); st != 201 {
			t.Fatalf("Keep it on sale ended the sale: grab %d", st)
		}
		ask("end sale now again")
		browse(t, ctx, "confirmed", chromedp.Click(tid("confirm-yes")), chromedp.WaitVisible(`[data-testid=flash-controls][data-kind=success]`))
		a.wantError("POST", fmt.Sprintf("/api/goods/%d/grab", g.ID), mustUser(a), nil, 409, "ended")
	})
}
