package main

import (
	"fmt"
	"html"
	"net/url"
	"strings"
	"testing"
)

// Without a script the checkout page pays at Stripe too: its form posts the
// method and comes back to the page (a form may not redirect to another
// site), which then shows WeChat Pay's QR code, or a link on to Stripe's
// page for a card; a method not configured is refused beside the form, in
// red, and opens nothing.
func TestStripeCheckoutFormWithoutScript(t *testing.T) {
	a := startPayApp(t)
	_, g := a.liveGoods(5, 2)
	s, _, _ := a.newCookieSession()
	byCard, byWeChat := a.grab(s.token, g.ID), a.grab(s.token, g.ID)
	path := func(o orderJSON) string { return fmt.Sprintf("/orders/%d", o.ID) }

	st, body, _ := s.page(path(byWeChat) + "/checkout")
	if st != 200 || !strings.Contains(body, `method="post" action="`+path(byWeChat)+`/checkout"`) || strings.Contains(body, `data-testid="checkout-pay"`) {
		t.Fatalf("the checkout with Stripe (%d) posts to the checkout and shows no simulated pay:\n%s", st, body)
	}
	if st, loc := s.postForm(path(byWeChat)+"/checkout", url.Values{"method": {"paypal"}}); st != 303 || loc != path(byWeChat)+"/checkout" {
		t.Fatalf("a method not configured: %d → %q", st, loc)
	}
	_, body, _ = s.page(path(byWeChat) + "/checkout")
	if kind, text, ok := flashAt(body, "checkout"); !ok || kind != "error" || text == "" {
		t.Fatalf("the refusal beside the form: %v %q %q", ok, kind, text)
	}
	if n := len(a.refunds()); n != 0 || strings.Contains(body, `data-testid="wechat-qr"`) {
		t.Fatal("a refused method opened a trade")
	}

	if st, loc := s.postForm(path(byWeChat)+"/checkout", url.Values{"method": {"wechat_pay"}}); st != 303 || loc != path(byWeChat)+"/checkout" {
		t.Fatalf("WeChat Pay: %d → %q, want back to the checkout", st, loc)
	}
	wc := a.checkout(s.token, byWeChat.ID, "wechat_pay")
	_, body, _ = s.page(path(byWeChat) + "/checkout")
	if !strings.Contains(body, `src="`+wc.QRCode+`"`) || !strings.Contains(body, `data-testid="wechat-qr"`) {
		t.Fatalf("the checkout does not show the QR code %.40q:\n%s", wc.QRCode, body)
	}

	if st, loc := s.postForm(path(byCard)+"/checkout", url.Values{"method": {"card"}}); st != 303 || loc != path(byCard)+"/checkout" {
		t.Fatalf("card: %d → %q, want back to the checkout", st, loc)
	}
	co := a.checkout(s.token, byCard.ID, "card")
	_, body, _ = s.page(path(byCard) + "/checkout")
	if !strings.Contains(html.UnescapeString(body), `href="`+co.URL+`" data-testid="checkout-continue"`) {
		t.Fatalf("the checkout has no link on to Stripe's page %s:\n%s", co.URL, body)
	}
	other, _, _ := a.newCookieSession()
	if st, _ := other.postForm(path(byCard)+"/checkout", url.Values{"method": {"card"}}); st != 404 {
		t.Fatalf("another shopper's order: %d, want 404", st)
	}
}
