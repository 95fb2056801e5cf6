package stripe

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/stripe/stripetest"
)

// recorded is one request that reached stripe-mock.
type recorded struct {
	method, path, key string
	form              url.Values
}

// recorder stands between the client and stripe-mock and keeps every request.
type recorder struct {
	mu   sync.Mutex
	reqs []recorded
}

func (r *recorder) all() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.reqs...)
}

func newClient(t *testing.T) (*Client, *recorder) {
	t.Helper()
	base, err := url.Parse(stripetest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	proxy := httputil.NewSingleHostReverseProxy(base)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if err := req.ParseForm(); err != nil {
			t.Error(err)
		}
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, recorded{req.Method, req.URL.Path, req.Header.Get("Idempotency-Key"), req.PostForm})
		rec.mu.Unlock()
		req.Body = http.NoBody
		req.ContentLength = 0
		if req.Method == http.MethodPost {
			enc := req.PostForm.Encode()
			req.Body = readCloser{strings.NewReader(enc)}
			req.ContentLength = int64(len(enc))
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	return New(Config{SecretKey: stripetest.SecretKey, WebhookSecret: stripetest.WebhookSecret, APIBase: srv.URL}), rec
}

type readCloser struct{ *strings.Reader }

func (readCloser) Close() error { return nil }

// A card or Alipay trade opens as a Checkout Session for the order, its
// amount and its one method, under the trade's idempotency key, and lives at
// least as Stripe allows.
func TestOpenAsksForTheOrdersCheckout(t *testing.T) {
	c, rec := newClient(t)
	now := time.Unix(1_900_000_000, 0)
	for _, method := range []string{model.MethodCard, model.MethodAlipay} {
		co, err := c.Open(context.Background(), model.Trade{OrderID: 1200007, Title: "Tea", AmountCents: 990, Currency: "cny", Method: method,
			ExpiresAt: now.Add(10 * time.Minute), SuccessURL: "http://shop/ok", CancelURL: "http://shop/back", Key: "order-1200007-" + method}, now)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		if !strings.HasPrefix(co.ProviderRef, "cs_") || co.URL == "" || co.Method != method {
			t.Fatalf("%s: checkout %+v", method, co)
		}
		r := rec.all()[len(rec.all())-1]
		f := r.form
		want := map[string]string{
			"mode": "payment", "payment_method_types[0]": method, "client_reference_id": "1200007", "metadata[order_id]": "1200007",
			"payment_intent_data[metadata][order_id]": "1200007", "line_items[0][price_data][unit_amount]": "990",
			"line_items[0][price_data][currency]": "cny", "line_items[0][quantity]": "1",
			"expires_at": "1900001860", // 31 minutes: Stripe keeps a session at least 30
		}
		for k, v := range want {
			if f.Get(k) != v {
				t.Errorf("%s: %s = %q, want %q", method, k, f.Get(k), v)
			}
		}
		if r.path != "/v1/checkout/sessions" || r.key != "order-1200007-"+method {
			t.Errorf("%s: %s %s with key %q", method, r.method, r.path, r.key)
		}
	}
}

// A WeChat Pay trade opens as a PaymentIntent confirmed at once for the
// order, under the trade's key, marked as a trade of its own, and answers
// Stripe's QR code (a PNG data URL) for our page to show, and no URL.
func TestOpenWeChatPayAnswersTheQRCode(t *testing.T) {
	c, rec := newClient(t)
	now := time.Unix(1_900_000_000, 0)
	co, err := c.Open(context.Background(), model.Trade{OrderID: 1200007, Title: "Tea", AmountCents: 990, Currency: "cny", Method: model.MethodWeChatPay,
		ExpiresAt: now.Add(10 * time.Minute), SuccessURL: "http://shop/ok", CancelURL: "http://shop/back", Key: "order-1200007-wechat_pay"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(co.ProviderRef, "pi_") || co.URL != "" || co.Method != model.MethodWeChatPay ||
		!strings.HasPrefix(co.QRCode, "data:image/png;base64,") || !co.ExpiresAt.Equal(now.Add(10*time.Minute)) {
		t.Fatalf("checkout %+v", co)
	}
	r := rec.all()[len(rec.all())-1]
	want := map[string]string{"amount": "990", "currency": "cny", "confirm": "true", "payment_method_types[0]": "wechat_pay",
		"payment_method_data[type]": "wechat_pay", "payment_method_options[wechat_pay][client]": "web",
		"metadata[order_id]": "1200007", "metadata[trade]": "payment_intent"}
	for k, v := range want {
		if r.form.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, r.form.Get(k), v)
		}
	}
	if r.path != "/v1/payment_intents" || r.key != "order-1200007-wechat_pay" {
		t.Errorf("%s %s with key %q", r.method, r.path, r.key)
	}
	// Closing it cancels the PaymentIntent.
	if _, err := c.Close(context.Background(), co.ProviderRef); err != nil {
		t.Fatal(err)
	}
	if r := rec.all()[len(rec.all())-1]; r.path != "/v1/payment_intents/"+co.ProviderRef+"/cancel" || r.method != http.MethodPost {
		t.Fatalf("close asked %s %s", r.method, r.path)
	}
}

// Close expires the session; a refund names the payment, the amount and its key.
func TestCloseAndRefund(t *testing.T) {
	c, rec := newClient(t)
	st, err := c.Close(context.Background(), "cs_test_abc")
	if err != nil {
		t.Fatal(err)
	}
	if st.Ref == "" || st.State == "" {
		t.Fatalf("close: %+v", st)
	}
	if r := rec.all()[0]; r.path != "/v1/checkout/sessions/cs_test_abc/expire" || r.method != http.MethodPost {
		t.Fatalf("close asked %s %s", r.method, r.path)
	}
	rf, err := c.Refund(context.Background(), "pi_123", 990, "expired", "refund-cs_test_abc")
	if err != nil {
		t.Fatal(err)
	}
	if rf.ID == "" {
		t.Fatalf("refund: %+v", rf)
	}
	r := rec.all()[1]
	if r.path != "/v1/refunds" || r.key != "refund-cs_test_abc" || r.form.Get("payment_intent") != "pi_123" || r.form.Get("amount") != "990" ||
		r.form.Get("metadata[reason]") != "expired" {
		t.Fatalf("refund asked %s with key %q and %v", r.path, r.key, r.form)
	}
}

// A webhook is read only under a good, fresh signature.
func TestEventVerifiesTheSignature(t *testing.T) {
	c := New(Config{SecretKey: stripetest.SecretKey, WebhookSecret: stripetest.WebhookSecret})
	now := time.Unix(1_900_000_000, 0)
	s := stripetest.Session{ID: "cs_test_1", OrderID: 1200007, AmountCents: 990, Currency: "cny", PaymentStatus: "paid", PaymentIntent: "pi_1"}
	body, sig := stripetest.Event("evt_1", "checkout.session.completed", s, now)
	ev, err := c.Event(body, sig, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	want := model.ProviderEvent{ID: "evt_1", Type: "checkout.session.completed", Paid: true, Ref: "cs_test_1", OrderID: 1200007,
		AmountCents: 990, Currency: "cny", PaymentIntent: "pi_1"}
	if *ev != want {
		t.Fatalf("event (-want +got):\n- %+v\n+ %+v", want, *ev)
	}
	s.PaymentStatus = "unpaid"
	body2, sig2 := stripetest.Event("evt_2", "checkout.session.completed", s, now)
	if ev, err := c.Event(body2, sig2, now); err != nil || ev.Paid {
		t.Fatalf("a completed session not paid yet: %+v, %v", ev, err)
	}
	for name, tc := range map[string]struct {
		body []byte
		sig  string
		at   time.Time
	}{
		"tampered body":  {append([]byte(nil), strings.Replace(string(body), "990", "1", 1)...), sig, now},
		"no signature":   {body, "", now},
		"other secret":   {body, strings.Replace(sig, "v1=", "v1=00", 1), now},
		"signed too old": {body, sig, now.Add(Tolerance + time.Second)},
	} {
		if _, err := c.Event(tc.body, tc.sig, tc.at); db.ErrorCode(err) != db.EINVALID {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
}

// A WeChat Pay trade is paid by payment_intent.succeeded; a PaymentIntent a
// Checkout Session made is left to the session's events.
func TestEventReadsAPaymentIntentTrade(t *testing.T) {
	c := New(Config{SecretKey: stripetest.SecretKey, WebhookSecret: stripetest.WebhookSecret})
	now := time.Unix(1_900_000_000, 0)
	body, sig := stripetest.IntentEvent("evt_1", "payment_intent.succeeded", stripetest.Intent{ID: "pi_1", OrderID: 1200007, AmountCents: 990,
		Currency: "cny", Status: "succeeded"}, now)
	ev, err := c.Event(body, sig, now)
	if err != nil {
		t.Fatal(err)
	}
	want := model.ProviderEvent{ID: "evt_1", Type: "payment_intent.succeeded", Paid: true, Ref: "pi_1", OrderID: 1200007,
		AmountCents: 990, Currency: "cny", PaymentIntent: "pi_1"}
	if *ev != want {
		t.Fatalf("event (-want +got):\n- %+v\n+ %+v", want, *ev)
	}
	// The same event about a session's PaymentIntent (no trade mark) names no trade.
	other := strings.Replace(string(body), `"trade":"payment_intent"`, `"trade":""`, 1)
	if ev, err := c.Event([]byte(other), stripetest.Sign([]byte(other), now), now); err != nil || ev.Ref != "" || ev.Paid {
		t.Fatalf("a session's PaymentIntent: %+v, %v", ev, err)
	}
	body2, sig2 := stripetest.IntentEvent("evt_2", "payment_intent.canceled", stripetest.Intent{ID: "pi_1", OrderID: 1200007, AmountCents: 990,
		Currency: "cny", Status: "canceled"}, now)
	if ev, err := c.Event(body2, sig2, now); err != nil || ev.Paid {
		t.Fatalf("a cancelled PaymentIntent: %+v, %v", ev, err)
	}
}

// During a rotation STRIPE_WEBHOOK_SECRET names the new and the old secret:
// an event signed with either is read, one signed with neither is refused.
func TestEventAcceptsBothSecretsDuringARotation(t *testing.T) {
	const newSecret = "whsec_rotated"
	c := New(Config{SecretKey: stripetest.SecretKey, WebhookSecret: newSecret + ", " + stripetest.WebhookSecret})
	now := time.Unix(1_900_000_000, 0)
	body, _ := stripetest.Event("evt_1", "checkout.session.completed", stripetest.Session{ID: "cs_1", OrderID: 1200007, AmountCents: 990,
		Currency: "cny", PaymentStatus: "paid", PaymentIntent: "pi_1"}, now)
	for _, secret := range []string{newSecret, stripetest.WebhookSecret} {
		if ev, err := c.Event(body, stripetest.SignWith(body, secret, now), now); err != nil || !ev.Paid {
			t.Errorf("signed with %s: %+v, %v", secret, ev, err)
		}
	}
	if _, err := c.Event(body, stripetest.SignWith(body, "whsec_other", now), now); db.ErrorCode(err) != db.EINVALID {
		t.Errorf("signed with neither: %v, want invalid", err)
	}
	if got := Secrets(" whsec_a ,whsec_b,"); len(got) != 2 || got[0] != "whsec_a" || got[1] != "whsec_b" {
		t.Errorf("Secrets: %q", got)
	}
}
