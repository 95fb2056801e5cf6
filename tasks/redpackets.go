package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/seckill/seckill/db"
)

// Red packet task types.
const (
	// TypeRedPacketExpire refunds a packet's unclaimed shares at its expiry.
	TypeRedPacketExpire = "redpacket:expire"
	// TypeRedPacketSweep expires overdue packets whose task was lost and reloads packets Redis lost.
	TypeRedPacketSweep = "redpacket:sweep"
)

type redPacketPayload struct {
	RedPacketID int64 `json:"redpacket_id"`
}

// NewRedPacketExpireTask runs at the packet's expiry. Its task ID comes from
// the packet ID, so scheduling it twice keeps one; it keeps retries because
// the refund must happen.
func NewRedPacketExpireTask(id int64, at time.Time) *asynq.Task {
	payload, _ := json.Marshal(redPacketPayload{RedPacketID: id})
	return asynq.NewTask(TypeRedPacketExpire, payload,
		asynq.ProcessAt(db.DueAt(at)), asynq.TaskID(fmt.Sprintf("redpacket:expire:%d", id)),
		asynq.Queue(QueueCritical), asynq.MaxRetry(10), asynq.Timeout(time.Minute), asynq.Retention(24*time.Hour))
}

// NewRedPacketSweepTask repairs red packets left behind by a crash.
func NewRedPacketSweepTask() *asynq.Task {
	return asynq.NewTask(TypeRedPacketSweep, nil, asynq.Queue(QueueDefault), asynq.MaxRetry(1), asynq.Timeout(2*time.Minute), asynq.Unique(time.Minute))
}

// ScheduleRedPacketExpiry returns the Store's hook that enqueues a packet's
// expiry task; a task already scheduled for the packet counts as success.
func ScheduleRedPacketExpiry(c *asynq.Client) func(ctx context.Context, id int64, at time.Time) error {
	return func(ctx context.Context, id int64, at time.Time) error {
		_, err := c.EnqueueContext(ctx, NewRedPacketExpireTask(id, at))
		if errors.Is(err, asynq.ErrTaskIDConflict) {
			return nil
		}
		return err
	}
}

// RedPacketStore is what the red packet tasks need.
type RedPacketStore interface {
	ExpireRedPacket(ctx context.Context, id int64) error
	SweepRedPackets(ctx context.Context) error
}

// RedPackets is the red packets' background work.
type RedPackets struct {
	Store RedPacketStore
}

// Register adds the expiry and sweep handlers.
func (r *RedPackets) Register(mux *asynq.ServeMux) {
	mux.HandleFunc(TypeRedPacketExpire, r.expire)
	mux.HandleFunc(TypeRedPacketSweep, func(ctx context.Context, _ *asynq.Task) error { return r.Store.SweepRedPackets(ctx) })
}

// Periodic sweeps every minute.
func (r *RedPackets) Periodic() []Periodic {
	return []Periodic{{Spec: "@every 1m", Task: NewRedPacketSweepTask()}}
}

func (r *RedPackets) expire(ctx context.Context, t *asynq.Task) error {
	var p redPacketPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.RedPacketID <= 0 {
		return fmt.Errorf("red packet expiry payload %q: %w", t.Payload(), asynq.SkipRetry)
	}
	return r.Store.ExpireRedPacket(ctx, p.RedPacketID)
}
