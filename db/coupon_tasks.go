package db

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
)

// Task types the coupon area enqueues from the Store: one fan-out per
// (template, start time, lead time), and one per email or webhook delivery
// that failed its first attempt. Package tasks handles them (and re-exports
// these names); they live here because db must not import tasks.
const (
	TaskCouponRemind  = "coupon:remind"
	TaskCouponDeliver = "coupon:deliver"
)

// Queues of the coupon tasks: tasks.QueueDefault and tasks.QueueLow, so
// expiry and flushes never wait behind reminders.
const (
	couponRemindQueue  = "default"
	couponDeliverQueue = "low"
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

// NewCouponRemindTask schedules the fan-out for the reminder time. Completed
// tasks are kept a day so their ID stays taken and Asynqmon shows them.
func NewCouponRemindTask(p CouponRemindPayload) *asynq.Task {
	body, _ := json.Marshal(p)
	return asynq.NewTask(TaskCouponRemind, body,
		asynq.TaskID(CouponRemindTaskID(p)), asynq.ProcessAt(RemindAt(p.GrabStartAt, p.MinutesBefore)),
		asynq.Queue(couponRemindQueue), asynq.MaxRetry(10), asynq.Timeout(30*time.Minute), asynq.Retention(24*time.Hour))
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

// NewCouponDeliverTask schedules the next attempt of one delivery after delay.
// Its ID names the attempt, so scheduling the same attempt twice makes one task.
func NewCouponDeliverTask(p CouponDeliverPayload, delay time.Duration) *asynq.Task {
	body, _ := json.Marshal(p)
	id := fmt.Sprintf("coupon:deliver:%d:%d:%d:%s:%d:%d", p.CouponID, p.GrabStartAt.Unix(), p.MinutesBefore, p.Channel, p.UserID, p.Attempt)
	return asynq.NewTask(TaskCouponDeliver, body,
		asynq.TaskID(id), asynq.ProcessIn(delay), asynq.Queue(couponDeliverQueue), asynq.MaxRetry(5), asynq.Timeout(time.Minute))
}
