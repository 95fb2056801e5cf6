package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/seckill/seckill/db"
)

// Coupon task types. The Store enqueues the reminder fan-out (when a user
// books) and delivery retries itself, so those two are defined in db.
const (
	TypeCouponRemind  = db.TaskCouponRemind
	TypeCouponDeliver = db.TaskCouponDeliver
	TypeCouponEnsure  = "coupon:ensure-reminders"
)

// NewCouponRemindTask is the fan-out of one reminder time, due at that time.
func NewCouponRemindTask(p db.CouponRemindPayload) *asynq.Task { return db.NewCouponRemindTask(p) }

// NewCouponDeliverTask is the next attempt of one failed email or webhook, after delay.
func NewCouponDeliverTask(p db.CouponDeliverPayload, delay time.Duration) *asynq.Task {
	return db.NewCouponDeliverTask(p, delay)
}

// NewCouponEnsureTask checks that every reminder due within the hour has its task.
func NewCouponEnsureTask() *asynq.Task {
	return asynq.NewTask(TypeCouponEnsure, nil, asynq.Queue(QueueLow), asynq.MaxRetry(1), asynq.Timeout(time.Minute))
}

// CouponReminders sends what the coupon tasks ask for.
type CouponReminders interface {
	// SendReminders notifies every booking of the reminder time, at most once each.
	SendReminders(ctx context.Context, p db.CouponRemindPayload) error
	// RetryDelivery makes the next attempt of one failed delivery.
	RetryDelivery(ctx context.Context, p db.CouponDeliverPayload) error
	// EnsureReminderTasks brings back fan-out tasks that Redis lost.
	EnsureReminderTasks(ctx context.Context) error
}

// Coupons runs the coupon reminder tasks.
type Coupons struct {
	Store CouponReminders
}

// Register adds the coupon task handlers.
func (c *Coupons) Register(mux *asynq.ServeMux) {
	mux.HandleFunc(TypeCouponRemind, func(ctx context.Context, t *asynq.Task) error {
		var p db.CouponRemindPayload
		if err := json.Unmarshal(t.Payload(), &p); err != nil || p.CouponID <= 0 || p.MinutesBefore <= 0 {
			return fmt.Errorf("coupon remind payload %q: %w", t.Payload(), asynq.SkipRetry)
		}
		return c.Store.SendReminders(ctx, p)
	})
	mux.HandleFunc(TypeCouponDeliver, func(ctx context.Context, t *asynq.Task) error {
		var p db.CouponDeliverPayload
		if err := json.Unmarshal(t.Payload(), &p); err != nil || p.CouponID <= 0 || p.UserID <= 0 || p.Channel == "" {
			return fmt.Errorf("coupon deliver payload %q: %w", t.Payload(), asynq.SkipRetry)
		}
		return c.Store.RetryDelivery(ctx, p)
	})
	mux.HandleFunc(TypeCouponEnsure, func(ctx context.Context, _ *asynq.Task) error { return c.Store.EnsureReminderTasks(ctx) })
}

// Periodic re-creates, once a minute, reminder tasks that Redis lost; the
// tasks themselves are scheduled when users book.
func (c *Coupons) Periodic() []Periodic {
	return []Periodic{{Spec: "@every 1m", Task: NewCouponEnsureTask(), Opts: []asynq.Option{asynq.Unique(50 * time.Second)}}}
}
