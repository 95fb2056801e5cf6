package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
)

// Checkout task types: one settle per payment gateway callback (its
// gateway_ref), the periodic marking of expired coupons and the periodic
// sweep that gives back coupons claimed for orders that were not paid with them.
const (
	TypePaymentSettle   = "payment:settle"
	TypeCouponExpire    = "coupon:expire"
	TypeCheckoutSweep   = "checkout:sweep-coupons"
	paymentTaskRetained = 24 * time.Hour
)

// PaymentPayload is a payment the gateway reported: the body of its callback.
type PaymentPayload struct {
	OrderID    int64  `json:"order_id"`
	PaidCents  int64  `json:"paid_cents"`
	GatewayRef string `json:"gateway_ref"`
}

// PaymentTaskID is the settle task's ID, from the gateway's ref: a repeated
// callback enqueues nothing new while the task is kept.
func PaymentTaskID(gatewayRef string) string { return "payment:" + gatewayRef }

// NewPaymentTask is the settle task of one gateway payment. It keeps
// retries (a payment acknowledged to the gateway must be settled) and is
// retained a day so its ID stays taken and its result readable.
func NewPaymentTask(p PaymentPayload) *asynq.Task {
	body, _ := json.Marshal(p)
	return asynq.NewTask(TypePaymentSettle, body, asynq.TaskID(PaymentTaskID(p.GatewayRef)), asynq.Queue(QueueCritical),
		asynq.MaxRetry(25), asynq.Timeout(30*time.Second), asynq.Retention(paymentTaskRetained))
}

// NewCouponExpireTask marks expired the unused coupons past their validity.
func NewCouponExpireTask() *asynq.Task {
	return asynq.NewTask(TypeCouponExpire, nil, asynq.Queue(QueueLow), asynq.MaxRetry(1), asynq.Timeout(time.Minute))
}

// NewCheckoutSweepTask gives back coupons a crash left claimed for orders not paid with them.
func NewCheckoutSweepTask() *asynq.Task {
	return asynq.NewTask(TypeCheckoutSweep, nil, asynq.Queue(QueueLow), asynq.MaxRetry(1), asynq.Timeout(5*time.Minute))
}

// PaymentOutcome is what settling a payment decided: "paid", or "refunded"
// with the reason (expired, cancelled, already_paid, amount, not_found…).
type PaymentOutcome struct {
	Outcome string `json:"outcome"`
	Reason  string `json:"reason,omitempty"`
	OrderID int64  `json:"order_id"`
}

// CheckoutStore is what the checkout tasks need.
type CheckoutStore interface {
	// SettlePayment decides one gateway payment exactly once: later calls answer the first outcome.
	SettlePayment(ctx context.Context, p PaymentPayload) (PaymentOutcome, error)
	// ExpireCoupons marks expired the unused coupons past their validity.
	ExpireCoupons(ctx context.Context) (int64, error)
	// SweepCoupons releases coupons claimed for orders that ended unpaid or were paid without them.
	SweepCoupons(ctx context.Context) (int, error)
}

// Checkout runs the checkout's tasks.
type Checkout struct {
	Store CheckoutStore
}

// Register adds the checkout task handlers. A settle writes its outcome as
// the task's result, for Asynqmon and the gateway's support staff.
func (c *Checkout) Register(mux *asynq.ServeMux) {
	mux.HandleFunc(TypePaymentSettle, func(ctx context.Context, t *asynq.Task) error {
		var p PaymentPayload
		if err := json.Unmarshal(t.Payload(), &p); err != nil || p.OrderID <= 0 || p.GatewayRef == "" {
			return fmt.Errorf("payment payload %q: %w", t.Payload(), asynq.SkipRetry)
		}
		out, err := c.Store.SettlePayment(ctx, p)
		if err != nil {
			return err
		}
		if w := t.ResultWriter(); w != nil {
			body, _ := json.Marshal(out)
			if _, err := w.Write(body); err != nil {
				return fmt.Errorf("write payment %s result: %w", p.GatewayRef, err)
			}
		}
		return nil
	})
	mux.HandleFunc(TypeCouponExpire, func(ctx context.Context, _ *asynq.Task) error {
		_, err := c.Store.ExpireCoupons(ctx)
		return err
	})
	mux.HandleFunc(TypeCheckoutSweep, func(ctx context.Context, _ *asynq.Task) error {
		_, err := c.Store.SweepCoupons(ctx)
		return err
	})
}

// Periodic marks expired coupons every minute and sweeps claimed coupons every half minute.
func (c *Checkout) Periodic() []Periodic {
	return []Periodic{
		{Spec: "@every 1m", Task: NewCouponExpireTask(), Opts: []asynq.Option{asynq.Unique(50 * time.Second)}},
		{Spec: "@every 30s", Task: NewCheckoutSweepTask(), Opts: []asynq.Option{asynq.Unique(25 * time.Second)}},
	}
}
