// Package stripe is the payment provider seckill takes real money through:
// Stripe Checkout for cards, Alipay and WeChat Pay. It is the only package
// that imports stripe-go; the checkout area sees it through a narrow
// interface of plain types (db/model's Trade, Checkout, TradeState,
// ProviderEvent), so no other code knows which provider it is.
//
// A card or Alipay trade is a Checkout Session in payment mode holding one
// payment method: its ID is the trade's reference, and it carries the order
// ID as client_reference_id and in its metadata (the PaymentIntent's too, so
// a payment found on its own names its order). A WeChat Pay trade is a
// PaymentIntent confirmed at once, whose QR code our own page shows (Stripe
// Checkout would show it on Stripe's page): its ID (pi_…) is the reference,
// and its metadata names the order and marks it as a trade of its own
// (metadata trade=payment_intent), apart from the PaymentIntents Checkout
// Sessions make.
package stripe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	stripego "github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
)

// Config is the provider's settings (STRIPE_* and PAYMENT_*).
type Config struct {
	SecretKey string
	// WebhookSecret is the webhook endpoint's signing secret; during a
	// rotation, the new and the old one, comma-separated (either verifies).
	WebhookSecret string
	// APIBase is the API's base URL; "" is Stripe's own.
	APIBase string
}

// SignatureHeader carries a webhook's signature.
const SignatureHeader = "Stripe-Signature"

// Tolerance is how far a webhook's signed time may be from now.
const Tolerance = 5 * time.Minute

// Client opens, closes and refunds trades at Stripe and reads its webhooks.
type Client struct {
	sc      *stripego.Client
	secrets []string
}

// New is a client for cfg.
func New(cfg Config) *Client {
	bc := &stripego.BackendConfig{HTTPClient: &http.Client{Timeout: 30 * time.Second}, MaxNetworkRetries: stripego.Int64(2)}
	if cfg.APIBase != "" {
		bc.URL = stripego.String(strings.TrimRight(cfg.APIBase, "/"))
	}
	bc.LeveledLogger = &stripego.LeveledLogger{Level: stripego.LevelNull}
	backends := &stripego.Backends{
		API:         stripego.GetBackendWithConfig(stripego.APIBackend, bc),
		Connect:     stripego.GetBackendWithConfig(stripego.ConnectBackend, bc),
		Uploads:     stripego.GetBackendWithConfig(stripego.UploadsBackend, bc),
		MeterEvents: stripego.GetBackendWithConfig(stripego.MeterEventsBackend, bc),
	}
	return &Client{sc: stripego.NewClient(cfg.SecretKey, stripego.WithBackends(backends)), secrets: Secrets(cfg.WebhookSecret)}
}

// Secrets are the webhook signing secrets a STRIPE_WEBHOOK_SECRET names:
// one, or during a rotation two (new,old), comma-separated.
func Secrets(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// intentTrade marks the PaymentIntents that are trades of their own
// (metadata trade), apart from those Checkout Sessions make.
const intentTrade = "payment_intent"

// isIntent reports whether a trade's reference is a PaymentIntent's.
func isIntent(ref string) bool { return strings.HasPrefix(ref, "pi_") }

// minSessionLife is the shortest life Stripe gives a Checkout Session:
// a trade meant to close sooner is closed by the order's expiry.
const minSessionLife = 31 * time.Minute

// Open opens the trade as a Checkout Session (the same t.Key opens the same
// session again) and answers where the shopper goes next.
func (c *Client) Open(ctx context.Context, t model.Trade, now time.Time) (*model.Checkout, error) {
	if t.Method == model.MethodWeChatPay {
		return c.openIntent(ctx, t)
	}
	expires := t.ExpiresAt
	if expires.Before(now.Add(minSessionLife)) {
		expires = now.Add(minSessionLife)
	}
	order := strconv.FormatInt(t.OrderID, 10)
	meta := map[string]string{"order_id": order}
	p := &stripego.CheckoutSessionCreateParams{
		Mode:               stripego.String(string(stripego.CheckoutSessionModePayment)),
		PaymentMethodTypes: []*string{stripego.String(t.Method)},
		ClientReferenceID:  stripego.String(order),
		Metadata:           meta,
		PaymentIntentData:  &stripego.CheckoutSessionCreatePaymentIntentDataParams{Metadata: meta},
		LineItems: []*stripego.CheckoutSessionCreateLineItemParams{{
			Quantity: stripego.Int64(1),
			PriceData: &stripego.CheckoutSessionCreateLineItemPriceDataParams{
				Currency:    stripego.String(t.Currency),
				UnitAmount:  stripego.Int64(t.AmountCents),
				ProductData: &stripego.CheckoutSessionCreateLineItemPriceDataProductDataParams{Name: stripego.String(t.Title)},
			},
		}},
		SuccessURL: stripego.String(t.SuccessURL),
		CancelURL:  stripego.String(t.CancelURL),
		ExpiresAt:  stripego.Int64(expires.Unix()),
	}
	p.Context = ctx
	p.SetIdempotencyKey(t.Key)
	s, err := c.sc.V1CheckoutSessions.Create(ctx, p)
	if err != nil {
		return nil, wrap("open a checkout for order "+order, err)
	}
	return &model.Checkout{Method: t.Method, ProviderRef: s.ID, URL: s.URL, ExpiresAt: time.Unix(s.ExpiresAt, 0).UTC()}, nil
}

// openIntent opens a WeChat Pay trade as a PaymentIntent confirmed at once
// (the same t.Key opens the same one again): Stripe answers the QR code the
// shopper scans, as a data URL (a PNG) our page shows.
func (c *Client) openIntent(ctx context.Context, t model.Trade) (*model.Checkout, error) {
	order := strconv.FormatInt(t.OrderID, 10)
	p := &stripego.PaymentIntentCreateParams{
		Amount:             stripego.Int64(t.AmountCents),
		Currency:           stripego.String(t.Currency),
		Description:        stripego.String(t.Title),
		PaymentMethodTypes: []*string{stripego.String(model.MethodWeChatPay)},
		PaymentMethodData: &stripego.PaymentIntentCreatePaymentMethodDataParams{
			Type: stripego.String(model.MethodWeChatPay), WeChatPay: &stripego.PaymentMethodWeChatPayParams{},
		},
		PaymentMethodOptions: &stripego.PaymentIntentCreatePaymentMethodOptionsParams{
			WeChatPay: &stripego.PaymentIntentCreatePaymentMethodOptionsWeChatPayParams{Client: stripego.String("web")},
		},
		Confirm:  stripego.Bool(true),
		Metadata: map[string]string{"order_id": order, "trade": intentTrade},
	}
	p.Context = ctx
	p.SetIdempotencyKey(t.Key)
	pi, err := c.sc.V1PaymentIntents.Create(ctx, p)
	if err != nil {
		return nil, wrap("open a WeChat Pay payment for order "+order, err)
	}
	qr := ""
	if na := pi.NextAction; na != nil && na.WeChatPayDisplayQRCode != nil {
		qr = na.WeChatPayDisplayQRCode.ImageDataURL
	}
	if !strings.HasPrefix(qr, "data:image/png;base64,") {
		// Without its QR code the shopper cannot pay: close it again at once.
		_, _ = c.sc.V1PaymentIntents.Cancel(ctx, pi.ID, &stripego.PaymentIntentCancelParams{Params: stripego.Params{Context: ctx}})
		return nil, fmt.Errorf("open a WeChat Pay payment for order %s: %w", order,
			db.Errorf(db.EUNAVAILABLE, "the payment provider gave no QR code to pay with; try again shortly"))
	}
	return &model.Checkout{Method: t.Method, ProviderRef: pi.ID, QRCode: qr, ExpiresAt: t.ExpiresAt.UTC()}, nil
}

// Close closes the trade so no payment can follow, and answers where it
// stands: closed, or paid (or pending) when the shopper paid first.
func (c *Client) Close(ctx context.Context, ref string) (*model.TradeState, error) {
	if isIntent(ref) {
		return c.closeIntent(ctx, ref)
	}
	s, err := c.sc.V1CheckoutSessions.Expire(ctx, ref, &stripego.CheckoutSessionExpireParams{Params: stripego.Params{Context: ctx}})
	var se *stripego.Error
	if errors.As(err, &se) && se.HTTPStatusCode == http.StatusBadRequest {
		// Not open any more (completed, or expired before): ask where it stands.
		s, err = c.sc.V1CheckoutSessions.Retrieve(ctx, ref, &stripego.CheckoutSessionRetrieveParams{Params: stripego.Params{Context: ctx}})
	}
	if err != nil {
		return nil, wrap("close checkout "+ref, err)
	}
	return stateOf(s), nil
}

// closeIntent cancels a PaymentIntent trade, or says where it stands when
// it can no longer be cancelled (paid, processing, cancelled before).
func (c *Client) closeIntent(ctx context.Context, ref string) (*model.TradeState, error) {
	pi, err := c.sc.V1PaymentIntents.Cancel(ctx, ref, &stripego.PaymentIntentCancelParams{Params: stripego.Params{Context: ctx}})
	var se *stripego.Error
	if errors.As(err, &se) && se.HTTPStatusCode == http.StatusBadRequest {
		pi, err = c.sc.V1PaymentIntents.Retrieve(ctx, ref, &stripego.PaymentIntentRetrieveParams{Params: stripego.Params{Context: ctx}})
	}
	if err != nil {
		return nil, wrap("close payment "+ref, err)
	}
	st := &model.TradeState{Ref: pi.ID, PaymentIntent: pi.ID, AmountCents: pi.Amount, Currency: string(pi.Currency)}
	switch pi.Status {
	case stripego.PaymentIntentStatusSucceeded:
		st.State = model.TradePaid
	case stripego.PaymentIntentStatusProcessing:
		st.State = model.TradePending
	case stripego.PaymentIntentStatusCanceled:
		st.State = model.TradeClosed
	default:
		st.State = model.TradeOpen
	}
	return st, nil
}

// stateOf is a session's trade state.
func stateOf(s *stripego.CheckoutSession) *model.TradeState {
	st := &model.TradeState{Ref: s.ID, AmountCents: s.AmountTotal, Currency: string(s.Currency)}
	if s.PaymentIntent != nil {
		st.PaymentIntent = s.PaymentIntent.ID
	}
	switch {
	case s.PaymentStatus == stripego.CheckoutSessionPaymentStatusPaid:
		st.State = model.TradePaid
	case s.Status == stripego.CheckoutSessionStatusComplete:
		st.State = model.TradePending
	case s.Status == stripego.CheckoutSessionStatusExpired:
		st.State = model.TradeClosed
	default:
		st.State = model.TradeOpen
	}
	return st
}

// Refund gives back amount cents of the trade's payment; the same key asks
// for the same refund again, never a second one.
func (c *Client) Refund(ctx context.Context, paymentIntent string, amountCents int64, reason, key string) (*model.ProviderRefund, error) {
	p := &stripego.RefundCreateParams{
		PaymentIntent: stripego.String(paymentIntent),
		Amount:        stripego.Int64(amountCents),
		Metadata:      map[string]string{"reason": reason},
	}
	if reason == "shopper" || reason == "merchant" {
		p.Reason = stripego.String(string(stripego.RefundReasonRequestedByCustomer))
	} else if reason == "already_paid" {
		p.Reason = stripego.String(string(stripego.RefundReasonDuplicate))
	}
	p.Context = ctx
	p.SetIdempotencyKey(key)
	r, err := c.sc.V1Refunds.Create(ctx, p)
	if err != nil {
		return nil, wrap("refund "+paymentIntent, err)
	}
	return &model.ProviderRefund{ID: r.ID, Status: string(r.Status)}, nil
}

// Payments walks the completed trades created since, newest first, each as
// the payment it holds.
func (c *Client) Payments(ctx context.Context, since time.Time, each func(model.ProviderPayment) error) error {
	p := &stripego.CheckoutSessionListParams{
		Status:       stripego.String(string(stripego.CheckoutSessionStatusComplete)),
		CreatedRange: &stripego.RangeQueryParams{GreaterThanOrEqual: since.Unix()},
	}
	p.AddExpand("data.payment_intent.latest_charge")
	p.Context = ctx
	for s, err := range c.sc.V1CheckoutSessions.List(ctx, p) {
		if err != nil {
			return wrap("list checkouts", err)
		}
		if s.PaymentStatus != stripego.CheckoutSessionPaymentStatusPaid {
			continue
		}
		pay := model.ProviderPayment{Ref: s.ID, AmountCents: s.AmountTotal, Currency: string(s.Currency), CreatedAt: time.Unix(s.Created, 0).UTC()}
		pay.OrderID, _ = strconv.ParseInt(s.Metadata["order_id"], 10, 64)
		if pi := s.PaymentIntent; pi != nil {
			pay.PaymentIntent = pi.ID
			if pi.LatestCharge != nil {
				pay.RefundedCents = pi.LatestCharge.AmountRefunded
			}
		}
		if err := each(pay); err != nil {
			return err
		}
	}
	return c.intentPayments(ctx, since, each)
}

// intentPayments walks the PaymentIntent trades (WeChat Pay) paid since.
func (c *Client) intentPayments(ctx context.Context, since time.Time, each func(model.ProviderPayment) error) error {
	p := &stripego.PaymentIntentListParams{CreatedRange: &stripego.RangeQueryParams{GreaterThanOrEqual: since.Unix()}}
	p.AddExpand("data.latest_charge")
	p.Context = ctx
	for pi, err := range c.sc.V1PaymentIntents.List(ctx, p) {
		if err != nil {
			return wrap("list payments", err)
		}
		if pi.Metadata["trade"] != intentTrade || pi.Status != stripego.PaymentIntentStatusSucceeded {
			continue
		}
		pay := model.ProviderPayment{Ref: pi.ID, PaymentIntent: pi.ID, AmountCents: pi.Amount, Currency: string(pi.Currency),
			CreatedAt: time.Unix(pi.Created, 0).UTC()}
		pay.OrderID, _ = strconv.ParseInt(pi.Metadata["order_id"], 10, 64)
		if pi.LatestCharge != nil {
			pay.RefundedCents = pi.LatestCharge.AmountRefunded
		}
		if err := each(pay); err != nil {
			return err
		}
	}
	return nil
}

// Event verifies a webhook (its signature under a webhook secret, signed
// within Tolerance of now) and reads the trade it is about. An event about
// anything but a Checkout Session or a PaymentIntent trade comes back with
// no Ref (nothing to do).
func (c *Client) Event(payload []byte, signature string, now time.Time) (*model.ProviderEvent, error) {
	if !c.signed(payload, signature) {
		return nil, db.Errorf(db.EINVALID, "the webhook's signature does not match")
	}
	if t, ok := signedAt(signature); !ok || now.Sub(t) > Tolerance || t.Sub(now) > Tolerance {
		return nil, db.Errorf(db.EINVALID, "the webhook's signature is too old")
	}
	var e struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		Data struct {
			Object json.RawMessage `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal(payload, &e); err != nil || e.ID == "" || e.Type == "" {
		return nil, db.Errorf(db.EINVALID, "the webhook is not a Stripe event")
	}
	ev := &model.ProviderEvent{ID: e.ID, Type: e.Type}
	if strings.HasPrefix(e.Type, "payment_intent.") {
		return intentEvent(ev, e.Data.Object)
	}
	if !strings.HasPrefix(e.Type, "checkout.session.") {
		return ev, nil
	}
	var s stripego.CheckoutSession
	if err := json.Unmarshal(e.Data.Object, &s); err != nil || s.ID == "" {
		return nil, db.Errorf(db.EINVALID, "the webhook's checkout session cannot be read")
	}
	ev.Ref, ev.AmountCents, ev.Currency = s.ID, s.AmountTotal, string(s.Currency)
	ev.OrderID, _ = strconv.ParseInt(s.Metadata["order_id"], 10, 64)
	if ev.OrderID == 0 {
		ev.OrderID, _ = strconv.ParseInt(s.ClientReferenceID, 10, 64)
	}
	if s.PaymentIntent != nil {
		ev.PaymentIntent = s.PaymentIntent.ID
	}
	switch e.Type {
	case "checkout.session.completed":
		ev.Paid = s.PaymentStatus == stripego.CheckoutSessionPaymentStatusPaid
	case "checkout.session.async_payment_succeeded":
		ev.Paid = true
	}
	return ev, nil
}

// signed reports whether one of the webhook secrets signed payload.
func (c *Client) signed(payload []byte, signature string) bool {
	for _, secret := range c.secrets {
		if webhook.ValidatePayloadIgnoringTolerance(payload, signature, secret) == nil {
			return true
		}
	}
	return false
}

// intentEvent reads an event about a PaymentIntent: one that is a trade of
// its own (WeChat Pay) is paid by payment_intent.succeeded; one a Checkout
// Session made is left to the session's events.
func intentEvent(ev *model.ProviderEvent, object json.RawMessage) (*model.ProviderEvent, error) {
	var pi stripego.PaymentIntent
	if err := json.Unmarshal(object, &pi); err != nil || pi.ID == "" {
		return nil, db.Errorf(db.EINVALID, "the webhook's payment intent cannot be read")
	}
	if pi.Metadata["trade"] != intentTrade {
		return ev, nil
	}
	ev.Ref, ev.PaymentIntent, ev.AmountCents, ev.Currency = pi.ID, pi.ID, pi.Amount, string(pi.Currency)
	if pi.AmountReceived > 0 {
		ev.AmountCents = pi.AmountReceived
	}
	ev.OrderID, _ = strconv.ParseInt(pi.Metadata["order_id"], 10, 64)
	ev.Paid = ev.Type == "payment_intent.succeeded" && pi.Status == stripego.PaymentIntentStatusSucceeded
	return ev, nil
}

// signedAt reads the time a Stripe-Signature header was signed at.
func signedAt(header string) (time.Time, bool) {
	for _, part := range strings.Split(header, ",") {
		if k, v, ok := strings.Cut(part, "="); ok && k == "t" {
			n, err := strconv.ParseInt(v, 10, 64)
			return time.Unix(n, 0), err == nil
		}
	}
	return time.Time{}, false
}

// wrap turns Stripe's answer into the service's errors: the network or
// Stripe failing is unavailable (try again), a refused request says why.
func wrap(what string, err error) error {
	var se *stripego.Error
	if errors.As(err, &se) {
		if se.HTTPStatusCode >= 500 || se.HTTPStatusCode == http.StatusTooManyRequests || se.HTTPStatusCode == 0 {
			return fmt.Errorf("%s: %w", what, db.Errorf(db.EUNAVAILABLE, "the payment provider does not answer; try again shortly"))
		}
		return fmt.Errorf("%s: stripe refused (%d %s): %s", what, se.HTTPStatusCode, se.Code, se.Msg)
	}
	return fmt.Errorf("%s: %w", what, db.Errorf(db.EUNAVAILABLE, "the payment provider does not answer; try again shortly"))
}
