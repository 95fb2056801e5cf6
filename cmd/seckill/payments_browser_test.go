package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/seckill/seckill/db/stripe/stripetest"
)

// stripePages answers, in the browser, every request to Stripe's hosted
// pages (checkout.stripe.com) with a stand-in page, since the test has no
// Internet, and sends each page's URL asked for on the channel answered.
func stripePages(t *testing.T, ctx context.Context) <-chan string {
	t.Helper()
	asked := make(chan string, 8)
	chromedp.ListenTarget(ctx, func(ev any) {
		e, ok := ev.(*fetch.EventRequestPaused)
		if !ok {
			return
		}
		go func() {
			if e.ResourceType == network.ResourceTypeDocument {
				select {
				case asked <- e.Request.URL:
				default:
				}
			}
			page := base64.StdEncoding.EncodeToString([]byte(`<!doctype html><title>Stripe Checkout</title><h1 id="stripe">Stripe Checkout (stand-in)</h1>`))
			c := chromedp.FromContext(ctx)
			_ = fetch.FulfillRequest(e.RequestID, 200).WithBody(page).
				WithResponseHeaders([]*fetch.HeaderEntry{{Name: "Content-Type", Value: "text/html"}}).Do(cdp.WithExecutor(ctx, c.Target))
		}()
	})
	browse(t, ctx, "stand in for Stripe's pages", fetch.Enable().WithPatterns([]*fetch.RequestPattern{{URLPattern: "https://checkout.stripe.com/*"}}))
	return asked
}

// A shopper pays an order on its checkout page by card and by WeChat Pay,
// at 1366 and at 390 px (the phone in Chinese): the page offers the
// configured methods instead of the simulated pay; a card goes on to the
// Checkout URL the API answers, and back on our page the order waits until
// the signed webhook pays it, then shows the receipt; WeChat Pay shows its
// QR code on our own page (a data URL, no script from another site) and
// moves on to the receipt when the webhook pays it.
func TestStripeCheckoutBrowser(t *testing.T) {
	a := startPayApp(t)
	_, g := a.liveGoods(10, 4)
	name, tok := a.register("payer")
	ctx := newBrowser(t)
	asked := stripePages(t, ctx)
	browse(t, ctx, "log in", browserLogin(ctx, a.URL, name, "password123"))

	for i, size := range []struct {
		name, lang string
		w, h       int64
	}{{"desktop", "en", 1366, 900}, {"phone", "zh-CN", 390, 844}} {
		t.Run(size.name, func(t *testing.T) {
			byCard, byWeChat := a.grab(tok, g.ID), a.grab(tok, g.ID)
			checkoutURL := fmt.Sprintf("%s/orders/%d/checkout", a.URL, byCard.ID)
			browse(t, ctx, "open the checkout", chromedp.EmulateViewport(size.w, size.h), chromedp.Navigate(checkoutURL),
				chromedp.WaitVisible(`[data-testid=checkout-method-card]`))
			var shown string
			browse(t, ctx, "read the language", chromedp.Evaluate(`document.documentElement.lang`, &shown))
			if shown != size.lang {
				browse(t, ctx, "switch to "+size.lang, chromedp.Click(`[data-testid=lang-`+size.lang+`]`, chromedp.ByQuery),
					chromedp.WaitVisible(`html[lang=`+size.lang+`] [data-testid=checkout-method-card]`))
			}
			var methods []string
			var simulated bool
			browse(t, ctx, "read the methods",
				chromedp.Evaluate(`[...document.querySelectorAll('[data-checkout-form] button[name=method]')].map(b => b.value + ":" + b.innerText.trim())`, &methods),
				chromedp.Evaluate(`document.querySelector('[data-testid=checkout-pay]') !== null`, &simulated))
			wantMethods := "card:Pay by card,alipay:Pay with Alipay,wechat_pay:Pay with WeChat Pay"
			if size.lang == "zh-CN" {
				wantMethods = "card:银行卡支付,alipay:支付宝支付,wechat_pay:微信支付"
			}
			if strings.Join(methods, ",") != wantMethods || simulated {
				t.Fatalf("methods offered %v (want %s), simulated pay shown %v", methods, wantMethods, simulated)
			}
			noWiderThanViewport(t, ctx, "the checkout's methods")

			// By card: on to the Checkout URL, back to our page waiting, then the webhook.
			browse(t, ctx, "pay by card", chromedp.Click(`[data-testid=checkout-method-card]`), chromedp.WaitVisible(`#stripe`))
			co := a.checkout(tok, byCard.ID, "card") // the same trade again
			if got := <-asked; got != co.URL || !strings.HasPrefix(co.URL, "https://checkout.stripe.com/") {
				t.Fatalf("the browser went to %s, the checkout's URL is %s", got, co.URL)
			}
			browse(t, ctx, "come back from Stripe before its webhook",
				chromedp.Navigate(fmt.Sprintf("%s/orders/%d/receipt", a.URL, byCard.ID)),
				chromedp.WaitVisible(`[data-testid=checkout-waiting]`),
				chromedp.WaitVisible(`[data-testid=checkout-continue]`))
			var cont string
			browse(t, ctx, "read the way back to Stripe", chromedp.AttributeValue(`[data-testid=checkout-continue]`, "href", &cont, nil))
			if cont != co.URL {
				t.Fatalf("continue goes to %q, want %q", cont, co.URL)
			}
			body, sig := a.paidEvent(fmt.Sprintf("evt_card_%d", i), byCard, co)
			if st := a.webhook(body, sig); st != 200 {
				t.Fatalf("card webhook: %d", st)
			}
			browse(t, ctx, "the receipt once paid", chromedp.WaitVisible(`[data-testid=receipt-page]`))
			if o := a.order(tok, byCard.ID); o.Status != "paid" {
				t.Fatalf("card order: %s", o.Status)
			}

			// By WeChat Pay: the QR code on our page, then the webhook.
			browse(t, ctx, "pay with WeChat Pay",
				chromedp.Navigate(fmt.Sprintf("%s/orders/%d/checkout", a.URL, byWeChat.ID)),
				chromedp.Click(`[data-testid=checkout-method-wechat_pay]`, chromedp.NodeVisible),
				chromedp.WaitVisible(`[data-testid=wechat-qr]`))
			wc := a.checkout(tok, byWeChat.ID, "wechat_pay")
			var src string
			var drawn bool
			var scripts []string
			browse(t, ctx, "read the QR code",
				chromedp.Poll(`(() => { const i = document.querySelector('[data-testid=wechat-qr]'); return i.complete && i.naturalWidth > 0; })()`, &drawn),
				chromedp.AttributeValue(`[data-testid=wechat-qr]`, "src", &src, nil),
				chromedp.Evaluate(`[...document.scripts].filter(s => s.src).map(s => new URL(s.src).origin)`, &scripts))
			if !strings.HasPrefix(wc.QRCode, "data:image/png;base64,") || src != wc.QRCode || !drawn {
				t.Fatalf("the QR code shown is %.40q (drawn %v), the checkout's %.40q", src, drawn, wc.QRCode)
			}
			for _, origin := range scripts {
				if origin != a.URL {
					t.Fatalf("the page loads a script from %s", origin)
				}
			}
			noWiderThanViewport(t, ctx, "the WeChat Pay QR code")
			if i == 0 {
				shoot(t, ctx, "checkout-wechat") // at both sizes
			}
			body, sig = stripetest.IntentEvent(fmt.Sprintf("evt_wechat_%d", i), "payment_intent.succeeded", stripetest.Intent{ID: wc.ProviderRef,
				OrderID: byWeChat.ID, AmountCents: byWeChat.AmountCents, Currency: "cny", Status: "succeeded"}, a.Clock.Now())
			if st := a.webhook(body, sig); st != 200 {
				t.Fatalf("WeChat Pay webhook: %d", st)
			}
			browse(t, ctx, "the page moves on to the receipt", chromedp.WaitVisible(`[data-testid=receipt-page]`))
			if o := a.order(tok, byWeChat.ID); o.Status != "paid" {
				t.Fatalf("WeChat Pay order: %s", o.Status)
			}
		})
	}
	if r := a.refunds(); len(r) != 0 {
		t.Fatalf("refunds: %v", r)
	}
}
