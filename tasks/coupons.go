package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/seckill/seckill/db/model"
)

// Coupon task types: one fan-out per (template, start time, lead time),
// enqueued when a user books; one per email or webhook delivery that failed
// an attempt; the periodic check that the fan-outs exist; and the periodic
// sweep of deliveries whose attempt outlived its lease.
const (
	TypeCouponRemind  = "coupon:remind"
	TypeCouponDeliver = "coupon:deliver"
	TypeCouponEnsure  = "coupon:ensure-reminders"
	TypeCouponSweep   = "coupon:sweep-deliveries"
)

// Queues of the coupon tasks, so expiry and payments never wait behind reminders.
const (
	CouponRemindQueue  = QueueDefault
	CouponDeliverQueue = QueueLow
)

// CouponRemindPayload names one reminder time of one template. The start time
// is part of it so a task left over from before a reschedule does nothing.
type CouponRemindPayload struct {
	CouponID      int64     `json:"coupon_id"`
	GrabStartAt   time.Time `json:"grab_start_at"`
	MinutesBefore int       `json:"minutes_before"`
}

// CouponRemindTaskID is unique per (template, start time, lead time), so
// however many users book the same reminder time, one task exists.
func CouponRemindTaskID(p CouponRemindPayload) string {
	return fmt.Sprintf("coupon:remind:%d:%d:%d", p.CouponID, p.GrabStartAt.Unix(), p.MinutesBefore)
}

// NewCouponRemindTask is the fan-out of one reminder time, due at that time.
// Completed tasks are kept a day so their ID stays taken and Asynqmon shows them.
func NewCouponRemindTask(p CouponRemindPayload) *asynq.Task {
	body, _ := json.Marshal(p)
	return newRemindTask(TypeCouponRemind, CouponRemindTaskID(p), model.RemindAt(p.GrabStartAt, p.MinutesBefore), CouponRemindQueue, body)
}

// newRemindTask is the fan-out task of one reminder time, coupons' or
// goods': unique by id, due at, retried for a while and kept a day after it
// ran so its ID stays taken.
func newRemindTask(typ, id string, at time.Time, queue string, body []byte) *asynq.Task {
	return asynq.NewTask(typ, body, asynq.TaskID(id), asynq.ProcessAt(at),
		asynq.Queue(queue), asynq.MaxRetry(10), asynq.Timeout(30*time.Minute), asynq.Retention(24*time.Hour))
}

// CouponDeliverPayload is one email or webhook reminder to retry; Attempt
// counts the attempts already made.
type CouponDeliverPayload struct {
	CouponID      int64     `json:"coupon_id"`
	GrabStartAt   time.Time `json:"grab_start_at"`
	MinutesBefore int       `json:"minutes_before"`
	Channel       string    `json:"channel"`
	UserID        int64     `json:"user_id"`
	Attempt       int       `json:"attempt"`
}

// NewCouponDeliverTask is the next attempt of one failed email or webhook, after delay.
// Its ID names the attempt, so scheduling the same attempt twice makes one task.
func NewCouponDeliverTask(p CouponDeliverPayload, delay time.Duration) *asynq.Task {
	body, _ := json.Marshal(p)
	id := fmt.Sprintf("coupon:deliver:%d:%d:%d:%s:%d:%d", p.CouponID, p.GrabStartAt.Unix(), p.MinutesBefore, p.Channel, p.UserID, p.Attempt)
	return asynq.NewTask(TypeCouponDeliver, body,
		asynq.TaskID(id), asynq.ProcessIn(delay), asynq.Queue(CouponDeliverQueue), asynq.MaxRetry(5), asynq.Timeout(time.Minute))
}

// NewCouponEnsureTask checks that every reminder due within the hour has its task.
func NewCouponEnsureTask() *asynq.Task {
	return asynq.NewTask(TypeCouponEnsure, nil, asynq.Queue(QueueLow), asynq.MaxRetry(1), asynq.Timeout(time.Minute))
}

// NewCouponSweepTask resends the email and webhook deliveries whose lease ran out.
// Its timeout leaves room for a full sweep of slow endpoints.
func NewCouponSweepTask() *asynq.Task {
	return asynq.NewTask(TypeCouponSweep, nil, asynq.Queue(CouponDeliverQueue), asynq.MaxRetry(1), asynq.Timeout(15*time.Minute))
}

// CouponReminders sends what the coupon tasks ask for.
type CouponReminders interface {
	// SendReminders notifies every booking of the reminder time, at most once each.
	SendReminders(ctx context.Context, p CouponRemindPayload) error
	// RetryDelivery makes the next attempt of one failed delivery.
	RetryDelivery(ctx context.Context, p CouponDeliverPayload) error
	// EnsureReminderTasks brings back fan-out tasks that Redis lost.
	EnsureReminderTasks(ctx context.Context) error
	// SweepDeliveries makes the next attempt of every delivery whose lease ran out.
	SweepDeliveries(ctx context.Context) error
}

// Coupons runs the coupon reminder tasks.
type Coupons struct {
	Store CouponReminders
}

// Register adds the coupon task handlers.
func (c *Coupons) Register(mux *asynq.ServeMux) {
	mux.HandleFunc(TypeCouponRemind, func(ctx context.Context, t *asynq.Task) error {
		var p CouponRemindPayload
		if err := json.Unmarshal(t.Payload(), &p); err != nil || p.CouponID <= 0 || p.MinutesBefore <= 0 {
			return fmt.Errorf("coupon remind payload %q: %w", t.Payload(), asynq.SkipRetry)
		}
		return c.Store.SendReminders(ctx, p)
	})
	mux.HandleFunc(TypeCouponDeliver, func(ctx context.Context, t *asynq.Task) error {
		var p CouponDeliverPayload
		if err := json.Unmarshal(t.Payload(), &p); err != nil || p.CouponID <= 0 || p.UserID <= 0 || p.Channel == "" {
			return fmt.Errorf("coupon deliver payload %q: %w", t.Payload(), asynq.SkipRetry)
		}
		return c.Store.RetryDelivery(ctx, p)
	})
	mux.HandleFunc(TypeCouponEnsure, func(ctx context.Context, _ *asynq.Task) error { return c.Store.EnsureReminderTasks(ctx) })
	mux.HandleFunc(TypeCouponSweep, func(ctx context.Context, _ *asynq.Task) error { return c.Store.SweepDeliveries(ctx) })
}

// Periodic re-creates, once a minute, reminder tasks that Redis lost (the
// tasks themselves are scheduled when users book), and every half minute
// resends deliveries whose worker died in an attempt.
func (c *Coupons) Periodic() []Periodic {
	return []Periodic{
		{Spec: "@every 1m", Task: NewCouponEnsureTask(), Opts: []asynq.Option{asynq.Unique(50 * time.Second)}},
		{Spec: "@every 30s", Task: NewCouponSweepTask(), Opts: []asynq.Option{asynq.Unique(25 * time.Second)}},
	}
}
