package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/cmd/seckill/app"
	"github.com/seckill/seckill/db/checkout"
	"github.com/seckill/seckill/db/stripe/stripetest"
)

// The payment tests run against stripe-mock (skipped, saying so, when it
// is not installed). stripe-mock keeps no state: the webhooks are built
// here and signed as Stripe signs them.

type checkoutJSON struct {
	Method      string    `json:"method"`
	ProviderRef string    `json:"provider_ref"`
	URL         string    `json:"url"`
	QRCode      string    `json:"qr_code"`
	ExpiresAt   time.Time `json:"expires_at"`
}

// startPayApp starts a process paying through Stripe at stripe-mock.
func startPayApp(t *testing.T) *testApp {
	t.Helper()
	a, _, _ := startPayAppListing(t)
	return a
}

// startPayAppListing is startPayApp, with the Listing its Stripe answers
// the lists of payments from and that Stripe's base URL.
func startPayAppListing(t *testing.T) (*testApp, *stripetest.Listing, string) {
	t.Helper()
	base, listing := stripetest.StartListing(t)
	a := startApp(t, func(c *Config) {
		c.StripeSecretKey, c.StripeWebhookSecret, c.StripeAPIBase = stripetest.SecretKey, stripetest.WebhookSecret, base
		c.OrderTTL = time.Minute
	})
	return a, listing, base
}

func (a *testApp) payments() *checkout.Service {
	return app.AreaService[*checkout.Service](a.Main, "checkout")
}

func (a *testApp) checkout(token string, orderID int64, method string) checkoutJSON {
	a.T.Helper()
	var out struct{ Checkout checkoutJSON }
	if st := a.call("POST", fmt.Sprintf("/api/orders/%d/checkout", orderID), token, map[string]any{"method": method}, &out); st != 200 {
		a.T.Fatalf("checkout order %d: %d", orderID, st)
	}
	return out.Checkout
}

// webhook posts a Stripe event to the webhook and answers the status.
func (a *testApp) webhook(body []byte, signature string) int {
	req, err := http.NewRequest("POST", a.URL+"/api/payments/stripe", bytes.NewReader(body))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Stripe-Signature", signature)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

// paidEvent is Stripe's checkout.session.completed (paid) for the order's
// checkout, or payment_intent.succeeded for a WeChat Pay one.
func (a *testApp) paidEvent(id string, o orderJSON, co checkoutJSON) ([]byte, string) {
	if co.Method == "wechat_pay" {
		return stripetest.IntentEvent(id, "payment_intent.succeeded", stripetest.Intent{ID: co.ProviderRef, OrderID: o.ID,
			AmountCents: o.AmountCents, Currency: "cny", Status: "succeeded"}, a.Clock.Now())
	}
	return stripetest.Event(id, "checkout.session.completed", stripetest.Session{ID: co.ProviderRef, OrderID: o.ID,
		AmountCents: o.AmountCents, Currency: "cny", PaymentStatus: "paid", PaymentIntent: "pi_" + co.ProviderRef}, a.Clock.Now())
}

// refunds are the refunds asked of the provider, by order: reason.
func (a *testApp) refunds() map[int64]string {
	a.T.Helper()
	rows, err := a.Backend.SQL.R.Query(`SELECT order_id, reason FROM provider_refunds`)
	if err != nil {
		a.T.Fatal(err)
	}
	defer rows.Close()
	out := map[int64]string{}
	for rows.Next() {
		var id int64
		var reason string
		if err := rows.Scan(&id, &reason); err != nil {
			a.T.Fatal(err)
		}
		if _, twice := out[id]; twice {
			a.T.Fatalf("order %d refunded twice", id)
		}
		out[id] = reason
	}
	return out
}

// A checkout answers Stripe's next step, the same one again for the same
// order (a retry, or several at once, never open a second trade); the
// simulated pay is off and bad input changes nothing.
func TestStripeCheckoutRetriedAnswersTheSameTrade(t *testing.T) {
	a := startPayApp(t)
	_, g := a.liveGoods(5, 1)
	tok, _ := a.newUser()
	o := a.grab(tok, g.ID)

	a.wantError("POST", fmt.Sprintf("/api/orders/%d/checkout", o.ID), tok, map[string]any{"method": "paypal"}, 400, "invalid")
	a.wantError("POST", fmt.Sprintf("/api/orders/%d/checkout", o.ID), tok, map[string]any{}, 400, "invalid")
	a.wantError("POST", fmt.Sprintf("/api/orders/%d/checkout", o.ID), tok, map[string]any{"method": "card", "user_coupon_id": -1}, 400, "invalid")
	other, _ := a.newUser()
	a.wantError("POST", fmt.Sprintf("/api/orders/%d/checkout", o.ID), other, map[string]any{"method": "card"}, 404, "not_found")
	a.wantError("POST", fmt.Sprintf("/api/orders/%d/pay", o.ID), tok, nil, 409, "conflict")

	var wg sync.WaitGroup
	got := make([]checkoutJSON, 20)
	start := make(chan struct{})
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			var out struct{ Checkout checkoutJSON }
			if st := a.call("POST", fmt.Sprintf("/api/orders/%d/checkout", o.ID), tok, map[string]any{"method": "card"}, &out); st != 200 {
				t.Errorf("checkout %d: %d", i, st)
			}
			got[i] = out.Checkout
		}()
	}
	close(start)
	wg.Wait()
	first := got[0]
	if first.ProviderRef == "" || first.URL == "" || first.Method != "card" {
		t.Fatalf("checkout: %+v", first)
	}
	for i, co := range got {
		if co.ProviderRef != first.ProviderRef || co.URL != first.URL {
			t.Fatalf("checkout %d answered trade %s, checkout 0 %s: a retry must answer the same trade", i, co.ProviderRef, first.ProviderRef)
		}
	}
	if again := a.checkout(tok, o.ID, "card"); again.ProviderRef != first.ProviderRef {
		t.Fatalf("checkout again: %s, want %s", again.ProviderRef, first.ProviderRef)
	}
	var n int
	if err := a.Backend.SQL.R.QueryRow(`SELECT COUNT(*) FROM provider_trades WHERE order_id = ?`, o.ID).Scan(&n); err != nil || n != 1 {
		t.Fatalf("trades of the order: %d, %v", n, err)
	}
	if o := a.order(tok, o.ID); o.Status != "unpaid" {
		t.Fatalf("order after checkouts: %s", o.Status)
	}
}

// The webhook pays once: a bad signature is 400 and changes nothing, a
// duplicated success and a reordered (expired after completed) event change
// nothing more, and nothing is refunded.
func TestStripeWebhookPaysOnceDuplicatedOrReordered(t *testing.T) {
	a := startPayApp(t)
	mt, g := a.liveGoods(5, 1)
	tok, _ := a.newUser()
	o := a.grab(tok, g.ID)
	co := a.checkout(tok, o.ID, "alipay")

	body, sig := a.paidEvent("evt_paid", o, co)
	for name, bad := range map[string]string{"no signature": "", "wrong signature": "t=1,v1=00", "other secret": sig[:len(sig)-4] + "0000"} {
		if st := a.webhook(body, bad); st != 400 {
			t.Fatalf("%s: %d, want 400", name, st)
		}
	}
	if o := a.order(tok, o.ID); o.Status != "unpaid" {
		t.Fatalf("a bad signature changed the order: %s", o.Status)
	}
	if st := a.webhook(body, sig); st != 200 {
		t.Fatalf("webhook: %d", st)
	}
	if o := a.order(tok, o.ID); o.Status != "paid" {
		t.Fatalf("after the success: %s", o.Status)
	}
	// Duplicated (the same event, and another event of the same session) and reordered.
	if st := a.webhook(body, sig); st != 200 {
		t.Fatalf("replay: %d", st)
	}
	b2, s2 := a.paidEvent("evt_paid_again", o, co)
	if st := a.webhook(b2, s2); st != 200 {
		t.Fatalf("second success event: %d", st)
	}
	b3, s3 := stripetest.Event("evt_expired", "checkout.session.expired", stripetest.Session{ID: co.ProviderRef, OrderID: o.ID,
		AmountCents: o.AmountCents, Currency: "cny", PaymentStatus: "unpaid"}, a.Clock.Now())
	if st := a.webhook(b3, s3); st != 200 {
		t.Fatalf("late expired event: %d", st)
	}
	b4, s4 := stripetest.Event("evt_async", "checkout.session.async_payment_succeeded", stripetest.Session{ID: co.ProviderRef, OrderID: o.ID,
		AmountCents: o.AmountCents, Currency: "cny", PaymentStatus: "paid", PaymentIntent: "pi_" + co.ProviderRef}, a.Clock.Now())
	if st := a.webhook(b4, s4); st != 200 {
		t.Fatalf("late async success: %d", st)
	}
	if o := a.order(tok, o.ID); o.Status != "paid" {
		t.Fatalf("after the replays: %s", o.Status)
	}
	if r := a.refunds(); len(r) != 0 {
		t.Fatalf("refunds after one payment sent several times: %v", r)
	}
	if st := a.stats(mt, g.ID); st.Paid != 1 || st.Remaining != 4 {
		t.Fatalf("stats: paid %d remaining %d, want 1 and 4", st.Paid, st.Remaining)
	}
}

// A success that arrives after the expiry released the order is refunded
// through Stripe with its reason and the shopper is told; the unit, back on
// sale, goes to one other shopper only.
func TestStripeSuccessAfterReleaseIsRefunded(t *testing.T) {
	a := startPayApp(t)
	mt, g := a.liveGoods(1, 1)
	tok, _ := a.newUser()
	o := a.grab(tok, g.ID)
	co := a.checkout(tok, o.ID, "wechat_pay")

	// The expiry leaves a held order to the checkout, which closes the trade first.
	a.Clock.Advance(2 * time.Minute)
	if _, err := a.Goods.ExpireDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	if o := a.order(tok, o.ID); o.Status != "unpaid" {
		t.Fatalf("the expiry released an order whose trade is open: %s", o.Status)
	}
	if _, err := a.payments().CloseDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	if o := a.order(tok, o.ID); o.Status != "expired" {
		t.Fatalf("after the trade closed: %s", o.Status)
	}
	tok2, _ := a.newUser()
	o2 := a.grab(tok2, g.ID)

	body, sig := a.paidEvent("evt_late", o, co)
	if st := a.webhook(body, sig); st != 200 {
		t.Fatalf("late success: %d", st)
	}
	if o := a.order(tok, o.ID); o.Status != "expired" {
		t.Fatalf("a late success revived the order: %s", o.Status)
	}
	if r := a.refunds(); len(r) != 1 || r[o.ID] != "expired" {
		t.Fatalf("refunds: %v, want order %d refunded as expired", r, o.ID)
	}
	if st := a.webhook(body, sig); st != 200 || len(a.refunds()) != 1 {
		t.Fatalf("a replayed late success refunded again")
	}
	var n struct {
		Notifications []struct{ Kind, Message string }
	}
	a.call("GET", "/api/me/notifications", tok, nil, &n)
	told := false
	for _, x := range n.Notifications {
		told = told || x.Kind == checkout.NotificationPaymentRefunded
	}
	if !told {
		t.Fatalf("the shopper was not told of the refund: %+v", n.Notifications)
	}
	if st := a.stats(mt, g.ID); st.Paid != 0 || st.Unpaid != 1 || st.Remaining != 0 {
		t.Fatalf("stats: %+v, want the unit held by the second order only", st)
	}
	if o2 := a.order(tok2, o2.ID); o2.Status != "unpaid" {
		t.Fatalf("second order: %s", o2.Status)
	}
}

// A success webhook and the expiry released together, 200 times: each
// order ends with one outcome, paid (nothing refunded) or expired (its
// payment refunded once), and no unit is sold twice.
func TestStripeSuccessRacesExpiry(t *testing.T) {
	const n = 200
	a := startPayApp(t)
	mt, _ := a.newMerchant()
	g := a.createGoods(mt, a.createSlot(mt, -time.Minute, 10*time.Hour).ID, n, n) // 200 deadlines pass inside it
	tok, _ := a.newUser()
	orders := make([]orderJSON, n)
	for i := range orders {
		orders[i] = a.grab(tok, g.ID)
		co := a.checkout(tok, orders[i].ID, "card")
		body, sig := a.paidEvent(fmt.Sprintf("evt_%d", i), orders[i], co)
		a.Clock.Advance(time.Minute + time.Second) // this order is due; the ones before are settled
		start := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			if st := a.webhook(body, sig); st != 200 {
				t.Errorf("webhook of order %d: %d", orders[i].ID, st)
			}
		}()
		go func() {
			defer wg.Done()
			<-start
			if _, err := a.Goods.ExpireDue(context.Background()); err != nil {
				t.Error(err)
			}
			if _, err := a.payments().CloseDue(context.Background()); err != nil {
				t.Error(err)
			}
		}()
		close(start)
		wg.Wait()
	}
	if _, err := a.payments().CloseDue(context.Background()); err != nil { // whatever the races left open
		t.Fatal(err)
	}
	refunds := a.refunds()
	paid, expired := 0, 0
	for _, o := range orders {
		got := a.order(tok, o.ID)
		switch reason, refunded := refunds[o.ID]; {
		case got.Status == "paid" && !refunded:
			paid++
		case got.Status == "expired" && refunded && reason == "expired":
			expired++
		default:
			t.Errorf("order %d ended %s with refund %q (refunded %v): want paid and kept, or expired and refunded", o.ID, got.Status, reason, refunded)
		}
	}
	if len(refunds) != expired {
		t.Errorf("%d refunds for %d expired orders", len(refunds), expired)
	}
	st := a.stats(mt, g.ID)
	if st.Paid != int64(paid) || st.Unpaid != 0 || st.Remaining+st.Paid != n {
		t.Errorf("stats %+v after %d paid, %d expired: a unit lost or sold twice", st, paid, expired)
	}
	t.Logf("%d paid, %d expired and refunded", paid, expired)
}

// Reconciliation finds an order the store shows paid through Stripe that
// Stripe does not list (stripe-mock lists none of ours), says so on a line
// of its own and counts it for the alert; with nothing paid it finds none.
func TestStripeReconcileFindsMismatches(t *testing.T) {
	a := startPayApp(t)
	_, g := a.liveGoods(5, 1)
	tok, _ := a.newUser()
	o := a.grab(tok, g.ID)
	co := a.checkout(tok, o.ID, "card")
	var out bytes.Buffer
	if n, err := reconcilePayments(context.Background(), a.Main, 24*time.Hour, &out); err != nil || n != 0 {
		t.Fatalf("before any payment: %d mismatches, %v\n%s", n, err, out.String())
	}
	body, sig := a.paidEvent("evt_paid", o, co)
	if st := a.webhook(body, sig); st != 200 {
		t.Fatalf("webhook: %d", st)
	}
	out.Reset()
	n, err := reconcilePayments(context.Background(), a.Main, 24*time.Hour, &out)
	if err != nil || n != 1 || !strings.Contains(out.String(), fmt.Sprintf("not_at_provider\torder %d\t%s", o.ID, co.ProviderRef)) {
		t.Fatalf("after a payment Stripe does not list: %d mismatches, %v\n%s", n, err, out.String())
	}
	if _, err := a.payments().ReconcileRecent(context.Background()); err != nil || a.payments().LastMismatches() != 1 {
		t.Fatalf("the alert's gauge: %d, %v", a.payments().LastMismatches(), err)
	}
	if _, _, err := sinceFlag([]string{"-since", "soon"}); err == nil {
		t.Fatal("-since soon was taken")
	}
	if d, rest, err := sinceFlag([]string{"-since=2h", "-db-path", "x"}); err != nil || d != 2*time.Hour || len(rest) != 2 {
		t.Fatalf("-since=2h: %v %v %v", d, rest, err)
	}
}

// A payment of another amount than the order owes is refunded with reason
// amount, and the order, whose trade is spent, is released (its unit back on sale).
func TestStripeWrongAmountIsRefunded(t *testing.T) {
	a := startPayApp(t)
	mt, g := a.liveGoods(1, 1)
	tok, _ := a.newUser()
	o := a.grab(tok, g.ID)
	co := a.checkout(tok, o.ID, "card")
	body, sig := stripetest.Event("evt_short", "checkout.session.completed", stripetest.Session{ID: co.ProviderRef, OrderID: o.ID,
		AmountCents: o.AmountCents - 1, Currency: "cny", PaymentStatus: "paid", PaymentIntent: "pi_short"}, a.Clock.Now())
	if st := a.webhook(body, sig); st != 200 {
		t.Fatalf("webhook: %d", st)
	}
	if r := a.refunds(); r[o.ID] != "amount" {
		t.Fatalf("refunds: %v, want order %d refunded for its amount", r, o.ID)
	}
	if got := a.order(tok, o.ID); got.Status != "expired" {
		t.Fatalf("order after a wrong amount: %s", got.Status)
	}
	if st := a.stats(mt, g.ID); st.Remaining != 1 || st.Paid != 0 {
		t.Fatalf("stats: %+v, want the unit back on sale", st)
	}
}

// The shopper's refund of an order paid at Stripe asks Stripe for the
// money back once (a retry asks nothing more), and the desk's history says
// the order was paid by the gateway and where the refund stands.
func TestStripeRefundGoesThroughStripe(t *testing.T) {
	a := startPayApp(t)
	mt, g := a.liveGoods(2, 1)
	tok, _ := a.newUser()
	o := a.grab(tok, g.ID)
	co := a.checkout(tok, o.ID, "card")
	body, sig := a.paidEvent("evt_paid", o, co)
	if st := a.webhook(body, sig); st != 200 {
		t.Fatalf("webhook: %d", st)
	}
	if r := a.refunds(); len(r) != 0 {
		t.Fatalf("refunds before the shopper's: %v", r)
	}
	for range 2 {
		if st := a.call("POST", fmt.Sprintf("/api/orders/%d/refund", o.ID), tok, nil, nil); st != 200 {
			t.Fatalf("refund: %d", st)
		}
	}
	if r := a.refunds(); len(r) != 1 || r[o.ID] != "shopper" {
		t.Fatalf("refunds: %v, want the order's one, reason shopper", r)
	}
	var status string
	if err := a.Backend.SQL.R.QueryRow(`SELECT status FROM provider_refunds WHERE order_id = ?`, o.ID).Scan(&status); err != nil || status == "asked" {
		t.Fatalf("the refund's status: %q, %v: Stripe was not asked", status, err)
	}
	var one deskOrderPageJSON
	eventually(t, 10*time.Second, "the refunded order on the desk", func() bool {
		a.call("GET", fmt.Sprintf("/api/admin/orders/%d", o.ID), mt, nil, &one)
		return one.Order.Status == "refunded"
	})
	var paid, refunded deskStepJSON
	for _, s := range one.History {
		switch s.Status {
		case "paid":
			paid = s
		case "refunded":
			refunded = s
		}
	}
	if paid.Actor != "gateway" || !strings.Contains(paid.Detail, co.ProviderRef) || !strings.Contains(refunded.Detail, "provider refund "+status) {
		t.Fatalf("history: %+v", one.History)
	}
}

// Without a provider the simulated pay stands and the provider's routes say
// not_configured, changing nothing.
func TestStripeNotConfigured(t *testing.T) {
	a := startApp(t)
	_, g := a.liveGoods(1, 1)
	tok, _ := a.newUser()
	o := a.grab(tok, g.ID)
	a.wantError("POST", fmt.Sprintf("/api/orders/%d/checkout", o.ID), tok, map[string]any{"method": "card"}, 409, "not_configured")
	body, sig := stripetest.Event("evt_1", "checkout.session.completed", stripetest.Session{ID: "cs_x", OrderID: o.ID,
		AmountCents: o.AmountCents, Currency: "cny", PaymentStatus: "paid"}, a.Clock.Now())
	if st := a.webhook(body, sig); st != 409 {
		t.Fatalf("webhook without a provider: %d", st)
	}
	if got := a.order(tok, o.ID); got.Status != "unpaid" {
		t.Fatalf("order: %s", got.Status)
	}
	if st, _ := a.pay(tok, o.ID, 0); st != 200 {
		t.Fatalf("simulated pay: %d", st)
	}
}
