package checkout

import (
	"bytes"
	"context"
	"crypto/hmac"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/outbound"
	"github.com/seckill/seckill/tasks"
)

// Payment outcomes and the reasons a payment is refunded rather than paid.
const (
	OutcomePending  = "pending"
	OutcomePaid     = "paid"
	OutcomeRefunded = "refunded"

	RefundAlreadyPaid = "already_paid" // the order was paid before this payment (by pay or another gateway_ref)
	RefundAmount      = "amount"       // paid_cents is not what the order owes
	RefundNotFound    = "not_found"    // no such order
)

// SignatureHeader carries the callback's signature: "sha256=<hex HMAC-SHA256
// of the body>", the scheme of the webhooks seckill sends.
const SignatureHeader = outbound.SignatureHeader

// Sign is the signature header value of body under secret, as the gateway sends it.
var Sign = outbound.Sign

// AcceptCallback takes one payment gateway callback: the signature over the
// raw body must match (else unauthorized), the body must be
// {order_id, paid_cents, gateway_ref} (else invalid). The payment is
// recorded under its gateway_ref (a replay changes nothing) and its settle
// task enqueued under an ID from the ref (a repeat enqueues nothing new).
func (s *Service) AcceptCallback(ctx context.Context, body []byte, signature string) error {
	want := Sign(s.PaymentSecret, body)
	if len(s.PaymentSecret) == 0 || !hmac.Equal([]byte(signature), []byte(want)) {
		return db.Errorf(db.EUNAUTHORIZED, "the payment callback's signature does not match")
	}
	var p tasks.PaymentPayload
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return db.Errorf(db.EINVALID, "the body must be {order_id, paid_cents, gateway_ref}")
	}
	f := db.FieldErrors{}
	if p.OrderID <= 0 {
		f["order_id"] = "must be a positive integer"
	}
	if p.PaidCents < 0 {
		f["paid_cents"] = "must be at least 0"
	}
	if !db.ValidIdempotencyKey(p.GatewayRef) || strings.TrimSpace(p.GatewayRef) != p.GatewayRef {
		f["gateway_ref"] = "must be 1–64 printable characters"
	}
	if err := f.Err(); err != nil {
		return err
	}
	if _, err := s.SQL.W.ExecContext(ctx, `INSERT INTO payments (gateway_ref, order_id, paid_cents, created_ms) VALUES (?, ?, ?, ?)
		ON CONFLICT DO NOTHING`, p.GatewayRef, p.OrderID, p.PaidCents, s.Now().UnixMilli()); err != nil {
		return fmt.Errorf("record payment %s: %w", p.GatewayRef, err)
	}
	rec, err := s.payment(ctx, p.GatewayRef)
	if err != nil {
		return err
	}
	if rec.outcome != OutcomePending {
		return nil // settled already: a replay after the task's retention changes nothing
	}
	return s.Schedule(ctx, tasks.NewPaymentTask(rec.PaymentPayload))
}

// payment is a row of payments.
type payment struct {
	tasks.PaymentPayload
	outcome, reason string
}

func (s *Service) payment(ctx context.Context, ref string) (*payment, error) {
	p := &payment{}
	err := s.SQL.W.QueryRowContext(ctx, `SELECT gateway_ref, order_id, paid_cents, outcome, reason FROM payments WHERE gateway_ref = ?`, ref).
		Scan(&p.GatewayRef, &p.OrderID, &p.PaidCents, &p.outcome, &p.reason)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, db.Errorf(db.ENOTFOUND, "payment %s not found", ref)
	}
	return p, err
}

// SettlePayment decides one gateway payment, exactly once per gateway_ref:
// the order becomes paid, or the payment is refunded (the order was expired
// or cancelled, paid already, owed another amount, or does not exist). A
// later run answers the outcome of the first. The row recorded at accept
// is the payment (a task's payload that disagrees with it is ignored).
func (s *Service) SettlePayment(ctx context.Context, in tasks.PaymentPayload) (tasks.PaymentOutcome, error) {
	p, err := s.payment(ctx, in.GatewayRef)
	if db.ErrorCode(err) == db.ENOTFOUND { // a task enqueued without its row (never by AcceptCallback)
		if _, err = s.SQL.W.ExecContext(ctx, `INSERT INTO payments (gateway_ref, order_id, paid_cents, created_ms) VALUES (?, ?, ?, ?)
			ON CONFLICT DO NOTHING`, in.GatewayRef, in.OrderID, in.PaidCents, s.Now().UnixMilli()); err != nil {
			return tasks.PaymentOutcome{}, err
		}
		p, err = s.payment(ctx, in.GatewayRef)
	}
	if err != nil {
		return tasks.PaymentOutcome{}, err
	}
	if p.outcome != OutcomePending {
		return tasks.PaymentOutcome{Outcome: p.outcome, Reason: p.reason, OrderID: p.OrderID}, nil
	}
	outcome, reason, err := s.decide(ctx, p.PaymentPayload)
	if err != nil {
		return tasks.PaymentOutcome{}, err
	}
	res, err := s.SQL.W.ExecContext(ctx, `UPDATE payments SET outcome = ?, reason = ?, decided_ms = ? WHERE gateway_ref = ? AND outcome = ?`,
		outcome, reason, s.Now().UnixMilli(), p.GatewayRef, OutcomePending)
	if err != nil {
		return tasks.PaymentOutcome{}, fmt.Errorf("settle payment %s: %w", p.GatewayRef, err)
	}
	if n, _ := res.RowsAffected(); n == 0 { // another run settled it meanwhile: its outcome stands
		if p, err = s.payment(ctx, in.GatewayRef); err != nil {
			return tasks.PaymentOutcome{}, err
		}
		return tasks.PaymentOutcome{Outcome: p.outcome, Reason: p.reason, OrderID: p.OrderID}, nil
	}
	if outcome == OutcomeRefunded {
		s.Log.Warn("payment refunded, not applied", "gateway_ref", p.GatewayRef, "order", p.OrderID, "paid_cents", p.PaidCents, "reason", reason)
	}
	return tasks.PaymentOutcome{Outcome: outcome, Reason: reason, OrderID: p.OrderID}, nil
}

// decide pays the order for the payment, or says why the payment goes back.
// The pay script remembers its answer per gateway_ref, so a run repeated
// after a crash decides the same.
func (s *Service) decide(ctx context.Context, p tasks.PaymentPayload) (outcome, reason string, err error) {
	o, err := s.Goods.OrderOf(ctx, p.OrderID)
	if db.ErrorCode(err) == db.ENOTFOUND {
		return OutcomeRefunded, RefundNotFound, nil
	} else if err != nil {
		return "", "", err
	}
	if p.PaidCents != o.AmountCents {
		return OutcomeRefunded, RefundAmount, nil
	}
	o, code, err := s.Goods.PayByGateway(ctx, p.OrderID, p.GatewayRef)
	if db.ErrorCode(err) == db.ENOTFOUND {
		return OutcomeRefunded, RefundNotFound, nil
	} else if err != nil {
		return "", "", err
	}
	switch code {
	case "ok":
		return OutcomePaid, "", nil
	case "unchanged", model.OrderPaid:
		return OutcomeRefunded, RefundAlreadyPaid, nil
	case "lapsed":
		return OutcomeRefunded, model.OrderExpired, nil
	default: // expired, or the order's final status: expired, cancelled, failed, refunded
		return OutcomeRefunded, o.Status, nil
	}
}

// PaymentKey is the callback's signing key: PAYMENT_SECRET when configured,
// else derived from the session secret (apart from the webhook key).
func PaymentKey(configured string, sessionSecret []byte) []byte {
	return outbound.DeriveKey(configured, sessionSecret, "seckill payment callback key")
}
