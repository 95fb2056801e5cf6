package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/seckill/seckill/db/model"
)

// Goods reminder task types: one fan-out per (goods, start time, lead time),
// enqueued when a user books, and the periodic check that the fan-outs exist.
const (
	TypeGoodsRemind = "goods:remind"
	TypeGoodsEnsure = "goods:ensure-reminders"
)

// GoodsRemindQueue is the queue of the goods reminder fan-outs, beside the coupons'.
const GoodsRemindQueue = QueueDefault

// GoodsRemindPayload names one reminder time of one goods. The start time
// is part of it so a task left over from before a slot moved does nothing.
type GoodsRemindPayload struct {
	GoodsID       int64     `json:"goods_id"`
	StartAt       time.Time `json:"start_at"`
	MinutesBefore int       `json:"minutes_before"`
}

// GoodsRemindTaskID is unique per (goods, start time, lead time), so however
// many users book the same reminder time, one task exists.
func GoodsRemindTaskID(p GoodsRemindPayload) string {
	return fmt.Sprintf("goods:remind:%d:%d:%d", p.GoodsID, p.StartAt.Unix(), p.MinutesBefore)
}

// NewGoodsRemindTask is the fan-out of one reminder time, due at that time.
// Completed tasks are kept a day so their ID stays taken.
func NewGoodsRemindTask(p GoodsRemindPayload) *asynq.Task {
	body, _ := json.Marshal(p)
	return newRemindTask(TypeGoodsRemind, GoodsRemindTaskID(p), model.RemindAt(p.StartAt, p.MinutesBefore), GoodsRemindQueue, body)
}

// NewGoodsEnsureTask checks that every goods reminder due within the hour has its task.
func NewGoodsEnsureTask() *asynq.Task {
	return asynq.NewTask(TypeGoodsEnsure, nil, asynq.Queue(QueueLow), asynq.MaxRetry(1), asynq.Timeout(time.Minute))
}

// GoodsReminderStore sends what the goods reminder tasks ask for.
type GoodsReminderStore interface {
	// SendReminders notifies every booking of the reminder time, at most once each.
	SendReminders(ctx context.Context, p GoodsRemindPayload) error
	// EnsureReminderTasks brings back fan-out tasks that Redis lost.
	EnsureReminderTasks(ctx context.Context) error
}

// GoodsReminders runs the goods reminder tasks.
type GoodsReminders struct {
	Store GoodsReminderStore
}

// Register adds the goods reminder task handlers.
func (g *GoodsReminders) Register(mux *asynq.ServeMux) {
	mux.HandleFunc(TypeGoodsRemind, g.Remind)
	mux.HandleFunc(TypeGoodsEnsure, func(ctx context.Context, _ *asynq.Task) error { return g.Store.EnsureReminderTasks(ctx) })
}

// Remind runs one fan-out task.
func (g *GoodsReminders) Remind(ctx context.Context, t *asynq.Task) error {
	var p GoodsRemindPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.GoodsID <= 0 || p.MinutesBefore <= 0 {
		return fmt.Errorf("goods remind payload %q: %w", t.Payload(), asynq.SkipRetry)
	}
	return g.Store.SendReminders(ctx, p)
}

// Periodic re-creates, once a minute, goods reminder tasks that Redis lost
// (the tasks themselves are scheduled when users book).
func (g *GoodsReminders) Periodic() []Periodic {
	return []Periodic{{Spec: "@every 1m", Task: NewGoodsEnsureTask(), Opts: []asynq.Option{asynq.Unique(50 * time.Second)}}}
}
