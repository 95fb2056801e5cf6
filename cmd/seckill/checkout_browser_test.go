package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// A shopper grabs goods when the sale opens, follows "pay now" to the
// checkout, sees the coupons that apply best first (one below its minimum
// disabled with the reason) and the total follow the coupon picked, pays
// with a coupon, sees the discount in My orders, refunds, and finds the
// coupon unused again in My coupons.
func TestCheckoutBrowser(t *testing.T) {
	a := startApp(t)
	mt, _ := a.newMerchant()
	const startsIn = 5 * time.Minute
	slot := a.createSlot(mt, startsIn, time.Hour)
	g := a.createGoods(mt, slot.ID, 3, 1) // 2500 cents
	off := a.couponTemplate(mt, "amount_off", 500, 2000, 7)
	pct := a.couponTemplate(mt, "percent_off", 10, 0, 7)
	big := a.couponTemplate(mt, "amount_off", 300, 5000, 7)
	name, token := a.register("buyer")
	ucOff, ucPct, ucBig := a.grabCoupon(token, off.ID), a.grabCoupon(token, pct.ID), a.grabCoupon(token, big.ID)

	ctx := newBrowser(t)
	a.followClock(ctx)
	browse(t, ctx, "log in", browserLogin(ctx, a.URL, name, "password123"))
	browse(t, ctx, "open the goods before the sale",
		chromedp.Navigate(fmt.Sprintf("%s/goods/%d", a.URL, g.ID)),
		chromedp.WaitVisible(`[data-testid=start-countdown]`),
	)
	a.advance(startsIn)
	browse(t, ctx, "grab at the start and go to the checkout",
		chromedp.WaitEnabled(`[data-testid=grab-button]`),
		chromedp.Click(`[data-testid=grab-button]`),
		chromedp.WaitVisible(`[data-testid=grab-pay-link]`),
		chromedp.Click(`[data-testid=grab-pay-link]`),
		chromedp.WaitVisible(`[data-testid=checkout-form]`),
	)

	// The best coupon is first and picked; the one below its minimum is disabled with the reason.
	var order []string
	var bigDisabled bool
	var reason string
	browse(t, ctx, "read the coupon options",
		chromedp.Evaluate(`[...document.querySelectorAll('[data-checkout-form] input[name=coupon]')].map(i => i.value + (i.checked ? '*' : ''))`, &order),
		chromedp.JavascriptAttribute(tid("coupon-option", ucBig.ID), "disabled", &bigDisabled),
		chromedp.Text(tid("coupon-reason", ucBig.ID), &reason),
	)
	want := []string{"0", fmt.Sprint(ucOff.ID, "*"), fmt.Sprint(ucPct.ID), fmt.Sprint(ucBig.ID)}
	if strings.Join(order, ",") != strings.Join(want, ",") || !bigDisabled || !strings.Contains(reason, "50.00") {
		t.Fatalf("options %v (want %v), below-minimum disabled %v with %q", order, want, bigDisabled, reason)
	}
	waitText(t, ctx, `[data-testid=checkout-total]`, "¥20.00")
	browse(t, ctx, "pick 10% off", chromedp.Click(tid("coupon-option", ucPct.ID)))
	waitText(t, ctx, `[data-testid=checkout-total]`, "¥22.50")
	browse(t, ctx, "pick no coupon", chromedp.Click(`[data-testid=coupon-option-none]`))
	waitText(t, ctx, `[data-testid=checkout-total]`, "¥25.00")
	browse(t, ctx, "pick ¥5 off and pay",
		chromedp.Click(tid("coupon-option", ucOff.ID)),
		chromedp.Click(`[data-testid=checkout-pay]`),
		chromedp.WaitVisible(`[data-testid=receipt-page]`), // paying ends on the receipt
		chromedp.Navigate(a.URL+"/me/orders"),
		chromedp.WaitVisible(`[data-testid=orders-page]`),
	)
	var mine struct{ Orders []checkoutOrderJSON }
	a.call("GET", "/api/me/orders", token, nil, &mine)
	if len(mine.Orders) != 1 || mine.Orders[0].Status != "paid" || mine.Orders[0].UserCouponID != ucOff.ID {
		t.Fatalf("orders after paying in the browser: %+v", mine.Orders)
	}
	id := mine.Orders[0].ID
	waitText(t, ctx, tid("order-status", id), "Paid")
	waitText(t, ctx, tid("order-discount", id), "−¥5.00 coupon, paid ¥20.00")

	browse(t, ctx, "refund", chromedp.Click(tid("refund", id)), chromedp.WaitVisible(tid("confirm-yes")),
		chromedp.Click(tid("confirm-yes")), chromedp.WaitVisible(tid("flash-order", id)))
	waitText(t, ctx, tid("order-status", id), "Refunded")
	browse(t, ctx, "my coupons", chromedp.Navigate(a.URL+"/me/coupons"), chromedp.WaitVisible(`[data-testid=my-coupons]`))
	waitText(t, ctx, tid("my-coupon", off.ID)+` [data-user-coupon-status]`, "Unused")
}
