package checkout

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/inbox"
	"github.com/seckill/seckill/db/model"
)

// Paying at a provider (Stripe): the checkout opens a trade for the order
// and holds the order (the expiry leaves it alone); the provider's webhook
// pays it; the order's deadline closes the trade at the provider first
// (CloseDue) and then pays or releases the order, as the provider says.
// Money that finds no order to pay (it came after the release, twice, or
// for another amount) is refunded through the provider, once per trade,
// and the shopper is told.

// Provider is what the checkout needs of a payment provider (db/stripe).
type Provider interface {
	// Open opens a trade; the same Trade.Key opens the same one again.
	Open(ctx context.Context, t model.Trade, now time.Time) (*model.Checkout, error)
	// Close closes a trade so no payment can follow, and says where it stands.
	Close(ctx context.Context, ref string) (*model.TradeState, error)
	// Refund gives back a payment; the same key asks for the same refund.
	Refund(ctx context.Context, paymentIntent string, amountCents int64, reason, key string) (*model.ProviderRefund, error)
	// Event verifies and reads a webhook.
	Event(payload []byte, signature string, now time.Time) (*model.ProviderEvent, error)
	// Payments walks the provider's payments created since.
	Payments(ctx context.Context, since time.Time, each func(model.ProviderPayment) error) error
}

// Payments are the provider and its settings; a nil Provider keeps the simulated pay.
type Payments struct {
	Provider Provider
	Methods  []string
	Currency string
}

// Trade states in the store (provider_trades.state) beside model.TradeOpen,
// TradePaid, TradeClosed and TradeRefunded.
const tradeOpening = "opening"

// Reasons a provider's payment is refunded (beside RefundAlreadyPaid,
// RefundAmount and RefundNotFound, and the order's status when it ended
// unpaid), and the refunds the order's own refund asks for.
const (
	RefundShopper  = "shopper"
	RefundMerchant = "merchant"
)

// NotificationPaymentRefunded is the inbox kind telling a shopper their
// payment came back unapplied.
const NotificationPaymentRefunded = "payment_refunded"

// trade is a row of provider_trades.
type trade struct {
	OrderID, UserID                          int64
	Ref, Method, Currency, URL, QRCode       string
	AmountCents, DiscountCents, UserCouponID int64
	DeadlineMs, ExpiresMs                    int64
	State, Reason, PaymentIntent             string
}

const tradeColumns = `order_id, user_id, ref, method, currency, url, qr_code, amount_cents, discount_cents, user_coupon_id,
	deadline_ms, expires_ms, state, reason, payment_intent`

func scanTrade(row interface{ Scan(...any) error }) (*trade, error) {
	t := &trade{}
	err := row.Scan(&t.OrderID, &t.UserID, &t.Ref, &t.Method, &t.Currency, &t.URL, &t.QRCode, &t.AmountCents, &t.DiscountCents,
		&t.UserCouponID, &t.DeadlineMs, &t.ExpiresMs, &t.State, &t.Reason, &t.PaymentIntent)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, db.Errorf(db.ENOTFOUND, "no trade at the provider")
	}
	return t, err
}

func (s *Service) tradeOf(ctx context.Context, orderID int64) (*trade, error) {
	return scanTrade(s.SQL.W.QueryRowContext(ctx, `SELECT `+tradeColumns+` FROM provider_trades WHERE order_id = ?`, orderID))
}

func (s *Service) tradeByRef(ctx context.Context, ref string) (*trade, error) {
	return scanTrade(s.SQL.W.QueryRowContext(ctx, `SELECT `+tradeColumns+` FROM provider_trades WHERE ref = ?`, ref))
}

func (t *trade) checkout() *model.Checkout {
	return &model.Checkout{Method: t.Method, ProviderRef: t.Ref, URL: t.URL, QRCode: t.QRCode, ExpiresAt: time.UnixMilli(t.ExpiresMs).UTC()}
}

// tradeKey is the idempotency key of the order's trade at the provider.
func tradeKey(orderID int64) string { return "seckill-order-" + strconv.FormatInt(orderID, 10) }

// refundKey is the idempotency key of the refund of a trade.
func refundKey(ref string) string { return "seckill-refund-" + ref }

// ProviderConfigured reports whether shoppers pay at a provider (the simulated pay is off).
func (s *Service) ProviderConfigured() bool { return s.Payments.Provider != nil }

// Methods are the payment methods shoppers pay with at the provider (none: the simulated pay).
func (s *Service) Methods() []string {
	if s.Payments.Provider == nil {
		return nil
	}
	return s.Payments.Methods
}

// OpenCheckout is the trade open at the provider for the user's order, as
// its checkout answered it, and the amount it asks for after the coupon
// (nil: none open, or the order is not theirs).
func (s *Service) OpenCheckout(ctx context.Context, userID, orderID int64) (*model.Checkout, int64, error) {
	if s.Payments.Provider == nil {
		return nil, 0, nil
	}
	t, err := s.tradeOf(ctx, orderID)
	if db.ErrorCode(err) == db.ENOTFOUND {
		return nil, 0, nil
	} else if err != nil {
		return nil, 0, err
	}
	if t.UserID != userID || t.State != model.TradeOpen {
		return nil, 0, nil
	}
	return t.checkout(), t.AmountCents, nil
}

// Checkout opens (or answers again) the trade paying the user's order at
// the provider with method, with the user coupon userCouponID (0: none)
// claimed for it: the amount is the order's after the coupon. back is the
// site's base URL the provider sends the shopper back to.
func (s *Service) Checkout(ctx context.Context, userID, orderID int64, method string, userCouponID int64, back string) (*model.Checkout, error) {
	if s.Payments.Provider == nil {
		return nil, db.Errorf(db.ENOTCONFIGURED, "no payment provider is configured")
	}
	if !slices.Contains(s.Payments.Methods, method) {
		return nil, db.FieldErrorf("method", "must be one of %v", s.Payments.Methods)
	}
	o, err := s.Goods.Order(ctx, userID, orderID)
	if err != nil {
		return nil, err
	}
	if t, err := s.tradeOf(ctx, orderID); err == nil && t.State != tradeOpening {
		if t.State == model.TradeOpen && o.Status == model.OrderUnpaid {
			return t.checkout(), nil // the same order again: the same checkout
		}
		if o.Status == model.OrderUnpaid {
			return nil, db.ErrExpired
		}
	} else if err != nil && db.ErrorCode(err) != db.ENOTFOUND {
		return nil, err
	}
	switch o.Status {
	case model.OrderUnpaid:
	case model.OrderPaid:
		return nil, db.Errorf(db.ECONFLICT, "the order is paid already")
	default:
		return nil, db.ErrExpired
	}
	now := s.Now()
	if !now.Before(o.ExpiresAt) {
		return nil, db.ErrExpired
	}
	discount := int64(0)
	if userCouponID > 0 {
		if discount, err = s.Coupons.Claim(ctx, userID, userCouponID, orderID, o.AmountCents); err != nil {
			return nil, err
		}
	}
	title := o.GoodsTitle
	if title == "" {
		if g, err := s.Goods.Get(ctx, o.GoodsID); err == nil {
			title = g.Title
		}
	}
	if title == "" {
		title = "Order " + model.OrderNumber(orderID)
	}
	ms := now.UnixMilli()
	// The row first, then the hold: a trade the expiry must close is never
	// unknown to it. A row left by a checkout that failed is taken over.
	if _, err := s.SQL.W.ExecContext(ctx, `INSERT INTO provider_trades (order_id, user_id, method, amount_cents, discount_cents, user_coupon_id,
		currency, deadline_ms, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (order_id) DO UPDATE SET method = excluded.method, amount_cents = excluded.amount_cents,
			discount_cents = excluded.discount_cents, user_coupon_id = excluded.user_coupon_id, updated_ms = excluded.updated_ms
		WHERE provider_trades.state = 'opening'`,
		orderID, userID, method, o.AmountCents-discount, discount, userCouponID, s.Payments.Currency, o.ExpiresAt.UnixMilli(), ms, ms); err != nil {
		return nil, fmt.Errorf("record the trade of order %d: %w", orderID, err)
	}
	t, err := s.tradeOf(ctx, orderID)
	if err != nil {
		return nil, err
	}
	if t.State != tradeOpening { // another checkout of the order opened it meanwhile
		return t.checkout(), nil
	}
	if _, err := s.Goods.HoldForProvider(ctx, userID, orderID); err != nil {
		return nil, err
	}
	co, err := s.Payments.Provider.Open(ctx, model.Trade{OrderID: orderID, Title: title, AmountCents: t.AmountCents, Currency: t.Currency,
		Method: t.Method, ExpiresAt: o.ExpiresAt, Key: tradeKey(orderID) + "-" + t.Method,
		SuccessURL: back + "/orders/" + strconv.FormatInt(orderID, 10) + "/receipt",
		CancelURL:  back + "/orders/" + strconv.FormatInt(orderID, 10) + "/checkout"}, now)
	if err != nil {
		return nil, err // the trade stays opening: the expiry asks the provider again under the same key
	}
	if _, err := s.SQL.W.ExecContext(ctx, `UPDATE provider_trades SET ref = ?, url = ?, qr_code = ?, expires_ms = ?, state = ?, updated_ms = ?
		WHERE order_id = ? AND state = ?`, co.ProviderRef, co.URL, co.QRCode, co.ExpiresAt.UnixMilli(), model.TradeOpen, s.Now().UnixMilli(),
		orderID, tradeOpening); err != nil {
		return nil, fmt.Errorf("record the trade of order %d: %w", orderID, err)
	}
	// Two checkouts of one order at once may both have asked: the one
	// recorded first is the order's checkout, for both.
	if t, err = s.tradeOf(ctx, orderID); err != nil {
		return nil, err
	}
	return t.checkout(), nil
}

// AcceptProviderEvent takes one webhook of the provider: a bad signature is
// invalid and changes nothing; a success pays its order exactly once per
// trade, or is refunded; anything else is acknowledged and ignored. A
// replayed or reordered event changes nothing more.
func (s *Service) AcceptProviderEvent(ctx context.Context, payload []byte, signature string) error {
	if s.Payments.Provider == nil {
		return db.Errorf(db.ENOTCONFIGURED, "no payment provider is configured")
	}
	ev, err := s.Payments.Provider.Event(payload, signature, s.Now())
	if err != nil {
		return err
	}
	if !ev.Paid || ev.Ref == "" {
		return nil
	}
	s.Log.Info("provider payment", "event", ev.ID, "type", ev.Type, "ref", ev.Ref, "order", ev.OrderID)
	return s.settleProvider(ctx, model.TradeState{Ref: ev.Ref, State: model.TradePaid, PaymentIntent: ev.PaymentIntent,
		AmountCents: ev.AmountCents, Currency: ev.Currency}, ev.OrderID)
}

// settleProvider applies a payment the provider took for trade st.Ref
// (orderID as the provider names it): the order becomes paid, or the money
// goes back with a reason. Each step is conditional, so two settlements of
// one trade (the webhook and the expiry, a replay) decide once.
func (s *Service) settleProvider(ctx context.Context, st model.TradeState, orderID int64) error {
	t, err := s.tradeByRef(ctx, st.Ref)
	if db.ErrorCode(err) == db.ENOTFOUND {
		// Money for a trade the store does not know: nothing to pay, so it goes back.
		return s.refundProvider(ctx, st.Ref, orderID, 0, st.PaymentIntent, st.AmountCents, RefundNotFound)
	} else if err != nil {
		return err
	}
	switch t.State {
	case model.TradePaid, model.TradeRefunded:
		return s.retryRefund(ctx, t.Ref) // decided before: a replay changes nothing
	}
	if st.AmountCents != t.AmountCents || (st.Currency != "" && st.Currency != t.Currency) {
		// The trade is spent (its session completed) and its money goes
		// back: the order is released now, or no tick would close it.
		if err := s.refuseProvider(ctx, t, st, RefundAmount); err != nil {
			return err
		}
		_, err := s.Goods.ReleaseHeld(ctx, t.OrderID)
		return err
	}
	o, code, err := s.Goods.PayHeld(ctx, t.OrderID, t.Ref, t.DiscountCents, t.UserCouponID)
	if db.ErrorCode(err) == db.ENOTFOUND {
		return s.refuseProvider(ctx, t, st, RefundNotFound)
	} else if err != nil {
		return err
	}
	switch code {
	case "ok":
		_, err := s.SQL.W.ExecContext(ctx, `UPDATE provider_trades SET state = ?, payment_intent = ?, updated_ms = ? WHERE order_id = ? AND state IN (?, ?, ?)`,
			model.TradePaid, st.PaymentIntent, s.Now().UnixMilli(), t.OrderID, tradeOpening, model.TradeOpen, model.TradeClosed)
		return err
	case "unchanged", model.OrderPaid:
		return s.refuseProvider(ctx, t, st, RefundAlreadyPaid)
	case "lapsed":
		return s.refuseProvider(ctx, t, st, model.OrderExpired)
	default:
		return s.refuseProvider(ctx, t, st, o.Status)
	}
}

// refuseProvider records that trade t's payment is not applied and refunds it.
func (s *Service) refuseProvider(ctx context.Context, t *trade, st model.TradeState, reason string) error {
	res, err := s.SQL.W.ExecContext(ctx, `UPDATE provider_trades SET state = ?, reason = ?, payment_intent = ?, updated_ms = ?
		WHERE order_id = ? AND state IN (?, ?, ?)`, model.TradeRefunded, reason, st.PaymentIntent, s.Now().UnixMilli(),
		t.OrderID, tradeOpening, model.TradeOpen, model.TradeClosed)
	if err != nil {
		return fmt.Errorf("refuse the payment of order %d: %w", t.OrderID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return s.retryRefund(ctx, t.Ref) // settled by another run
	}
	s.Log.Warn("provider payment refunded, not applied", "ref", t.Ref, "order", t.OrderID, "reason", reason)
	if err := s.refundProvider(ctx, t.Ref, t.OrderID, t.UserID, st.PaymentIntent, st.AmountCents, reason); err != nil {
		return err
	}
	return nil
}

// refundProvider records the refund of a trade's payment (once per trade),
// tells the shopper (userID, 0: nobody known) and asks the provider for it.
func (s *Service) refundProvider(ctx context.Context, ref string, orderID, userID int64, paymentIntent string, amountCents int64, reason string) error {
	now := s.Now()
	var told map[int64]model.Notification
	err := s.SQL.Tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO provider_refunds (ref, order_id, payment_intent, amount_cents, reason, created_ms, updated_ms)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, ref, orderID, paymentIntent, amountCents, reason, now.UnixMilli(), now.UnixMilli())
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 || userID == 0 || reason == RefundShopper || reason == RefundMerchant {
			return nil
		}
		goodsID, _ := s.goodsOf(orderID)
		told, err = inbox.Add(ctx, tx, []int64{userID}, model.Notification{Kind: NotificationPaymentRefunded, GoodsID: goodsID, CreatedAt: now.UTC(),
			Message: refundMessage(orderID, amountCents, reason)})
		return err
	})
	if err != nil {
		return fmt.Errorf("record the refund of %s: %w", ref, err)
	}
	if len(told) > 0 {
		if err := s.Events.PublishAll(ctx, inbox.Messages(told)); err != nil {
			s.Log.Warn("push a refund's notification live", "order", orderID, "err", err) // the inbox has it
		}
	}
	return s.retryRefund(ctx, ref)
}

// goodsOf is the goods an order ID names.
func (s *Service) goodsOf(orderID int64) (int64, bool) {
	g := orderID / model.OrderSeqSpan
	return g, g > 0
}

// refundMessage tells the shopper why their payment came back.
func refundMessage(orderID, amountCents int64, reason string) string {
	why := "it could not be applied"
	switch reason {
	case model.OrderExpired:
		why = "it arrived after the order had expired and its item was released"
	case model.OrderCancelled:
		why = "the order had been cancelled"
	case RefundAlreadyPaid:
		why = "the order had been paid already"
	case RefundAmount:
		why = "the amount was not what the order owed"
	}
	return fmt.Sprintf("Your payment of %s for order #%s is being refunded: %s.", model.Yuan(amountCents), model.OrderNumber(orderID), why)
}

// retryRefund asks the provider for a recorded refund still unanswered
// (its idempotency key makes a second ask the same refund).
func (s *Service) retryRefund(ctx context.Context, ref string) error {
	var orderID, amount int64
	var pi, reason, status string
	err := s.SQL.W.QueryRowContext(ctx, `SELECT order_id, payment_intent, amount_cents, reason, status FROM provider_refunds WHERE ref = ?`, ref).
		Scan(&orderID, &pi, &amount, &reason, &status)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	} else if err != nil {
		return err
	}
	if status != "asked" {
		return nil
	}
	r, err := s.Payments.Provider.Refund(ctx, pi, amount, reason, refundKey(ref))
	if err != nil {
		return fmt.Errorf("refund order %d at the provider: %w", orderID, err)
	}
	_, err = s.SQL.W.ExecContext(ctx, `UPDATE provider_refunds SET refund_id = ?, status = ?, updated_ms = ? WHERE ref = ? AND status = 'asked'`,
		r.ID, r.Status, s.Now().UnixMilli(), ref)
	return err
}

// CloseDue closes at the provider every trade whose order is due to expire,
// then pays the order (the provider took the money first) or releases it
// (its unit back on sale); refunds whose ask failed are asked again. It
// answers how many trades it settled.
func (s *Service) CloseDue(ctx context.Context) (int, error) {
	if s.Payments.Provider == nil {
		return 0, nil
	}
	rows, err := s.SQL.W.QueryContext(ctx, `SELECT `+tradeColumns+` FROM provider_trades WHERE state IN (?, ?) AND deadline_ms <= ?
		ORDER BY deadline_ms LIMIT 500`, tradeOpening, model.TradeOpen, s.Now().UnixMilli())
	if err != nil {
		return 0, err
	}
	var due []*trade
	for rows.Next() {
		t, err := scanTrade(rows)
		if err != nil {
			rows.Close()
			return 0, err
		}
		due = append(due, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	n := 0
	for _, t := range due {
		done, err := s.closeTrade(ctx, t)
		if err != nil {
			s.Log.Warn("close a due trade at the provider; the next tick tries again", "order", t.OrderID, "ref", t.Ref, "err", err)
			continue
		}
		if done {
			n++
		}
	}
	asked, err := s.SQL.W.QueryContext(ctx, `SELECT ref FROM provider_refunds WHERE status = 'asked' LIMIT 100`)
	if err != nil {
		return n, err
	}
	var refs []string
	for asked.Next() {
		var r string
		if err := asked.Scan(&r); err != nil {
			asked.Close()
			return n, err
		}
		refs = append(refs, r)
	}
	asked.Close()
	for _, r := range refs {
		if err := s.retryRefund(ctx, r); err != nil {
			s.Log.Warn("ask the provider for a refund; the next tick tries again", "ref", r, "err", err)
		}
	}
	return n, nil
}

// closeTrade closes one due trade: it answers true once the trade is settled.
func (s *Service) closeTrade(ctx context.Context, t *trade) (bool, error) {
	if t.Ref == "" {
		// The provider never answered the checkout: ask again under the same
		// key, which answers the trade it opened, if it did.
		co, err := s.Payments.Provider.Open(ctx, model.Trade{OrderID: t.OrderID, Title: "Order " + model.OrderNumber(t.OrderID),
			AmountCents: t.AmountCents, Currency: t.Currency, Method: t.Method, ExpiresAt: time.UnixMilli(t.DeadlineMs),
			Key: tradeKey(t.OrderID) + "-" + t.Method}, time.UnixMilli(t.DeadlineMs))
		if err != nil {
			return false, err
		}
		if _, err := s.SQL.W.ExecContext(ctx, `UPDATE provider_trades SET ref = ?, expires_ms = ?, state = ?, updated_ms = ? WHERE order_id = ? AND ref = ''`,
			co.ProviderRef, co.ExpiresAt.UnixMilli(), model.TradeOpen, s.Now().UnixMilli(), t.OrderID); err != nil {
			return false, err
		}
		t.Ref = co.ProviderRef
	}
	st, err := s.Payments.Provider.Close(ctx, t.Ref)
	if err != nil {
		return false, err
	}
	switch st.State {
	case model.TradePaid:
		return true, s.settleProvider(ctx, *st, t.OrderID)
	case model.TradePending:
		return false, nil // the money is on its way: its webhook settles it
	}
	o, err := s.Goods.ReleaseHeld(ctx, t.OrderID)
	if err != nil {
		return false, err
	}
	_, err = s.SQL.W.ExecContext(ctx, `UPDATE provider_trades SET state = ?, updated_ms = ? WHERE order_id = ? AND state IN (?, ?)`,
		model.TradeClosed, s.Now().UnixMilli(), t.OrderID, tradeOpening, model.TradeOpen)
	if err == nil && o.Status == model.OrderPaid {
		s.Log.Info("a due trade's order was paid meanwhile", "order", t.OrderID)
	}
	return true, err
}

// refundProviderPaid asks the provider to refund a refunded order it was
// paid through (the shopper's or the desk's refund); an order paid without
// the provider asks nothing.
func (s *Service) refundProviderPaid(ctx context.Context, o *model.Order, reason string) {
	if s.Payments.Provider == nil {
		return
	}
	t, err := s.tradeOf(ctx, o.ID)
	if err != nil || t.State != model.TradePaid {
		if err != nil && db.ErrorCode(err) != db.ENOTFOUND {
			s.Log.Warn("read an order's trade for its refund", "order", o.ID, "err", err)
		}
		return
	}
	if err := s.refundProvider(context.WithoutCancel(ctx), t.Ref, o.ID, o.UserID, t.PaymentIntent, t.AmountCents, reason); err != nil {
		s.Log.Warn("ask the provider for an order's refund; the expiry tick asks again", "order", o.ID, "err", err)
	}
}

// ProviderRefund is where the provider's refund of an order stands ("" status: none).
func (s *Service) ProviderRefund(ctx context.Context, orderID int64) (reason, status string, err error) {
	err = s.SQL.R.QueryRowContext(ctx, `SELECT reason, status FROM provider_refunds WHERE order_id = ? ORDER BY created_ms DESC LIMIT 1`, orderID).
		Scan(&reason, &status)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", nil
	}
	return reason, status, err
}

// providerSteps adds to an order's history what its provider did: the
// payment taken (paid by the gateway, the method and the trade) and where
// the provider's refund stands (one for the order's refund, or for money
// that came back unapplied).
func (s *Service) providerSteps(ctx context.Context, o *model.DeskOrder, steps []model.OrderStep) ([]model.OrderStep, error) {
	var method, ref, state, treason string
	err := s.SQL.R.QueryRowContext(ctx, `SELECT method, ref, state, reason FROM provider_trades WHERE order_id = ?`, o.ID).Scan(&method, &ref, &state, &treason)
	if errors.Is(err, sql.ErrNoRows) {
		return steps, nil
	} else if err != nil {
		return nil, fmt.Errorf("order %d: its trade: %w", o.ID, err)
	}
	for i := range steps {
		if steps[i].Status == model.OrderPaid && state == model.TradePaid {
			steps[i].Actor, steps[i].ActorName = model.ActorGateway, ""
			steps[i].Detail = joinDetail(steps[i].Detail, fmt.Sprintf("%s at Stripe (%s)", method, ref))
		}
	}
	var reason, status, refundID string
	var at int64
	err = s.SQL.R.QueryRowContext(ctx, `SELECT reason, status, refund_id, updated_ms FROM provider_refunds WHERE order_id = ?`, o.ID).
		Scan(&reason, &status, &refundID, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return steps, nil
	} else if err != nil {
		return nil, fmt.Errorf("order %d: its provider refund: %w", o.ID, err)
	}
	detail := fmt.Sprintf("provider refund %s (reason %s)", status, reason)
	if refundID != "" {
		detail += " " + refundID
	}
	if o.Status == model.OrderRefunded {
		for i := range steps {
			if steps[i].Status == model.OrderRefunded {
				steps[i].Detail = joinDetail(steps[i].Detail, detail)
			}
		}
		return steps, nil
	}
	return append(steps, model.OrderStep{At: time.UnixMilli(at).UTC(), Status: model.OrderRefunded, Actor: model.ActorGateway, Detail: "payment " + detail}), nil
}

func joinDetail(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
