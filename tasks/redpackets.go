package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/seckill/seckill/db/backend"
)

// Red packet task types.
const (
	// TypeRedPacketExpire refunds a packet's unclaimed shares at its expiry;
	// the red packet service enqueues it at creation.
	TypeRedPacketExpire = "redpacket:expire"
	// TypeRedPacketSweep expires overdue packets whose task was lost and reloads packets Redis lost.
	TypeRedPacketSweep = "redpacket:sweep"
)

// RedPacketExpirePayload is the body of a packet's expiry task.
type RedPacketExpirePayload struct {
	RedPacketID int64 `json:"redpacket_id"`
}

// NewRedPacketExpireTask runs at the packet's expiry. Its task ID comes from
// the packet ID, so scheduling it twice keeps one; it keeps retries because
// the refund must happen.
func NewRedPacketExpireTask(id int64, at time.Time) *asynq.Task {
	payload, _ := json.Marshal(RedPacketExpirePayload{RedPacketID: id})
	return asynq.NewTask(TypeRedPacketExpire, payload,
		asynq.ProcessAt(backend.DueAt(at)), asynq.TaskID(fmt.Sprintf("redpacket:expire:%d", id)),
		asynq.Queue(QueueCritical), asynq.MaxRetry(10), asynq.Timeout(time.Minute), asynq.Retention(24*time.Hour))
}

// NewRedPacketSweepTask repairs red packets left behind by a crash.
func NewRedPacketSweepTask() *asynq.Task {
	return asynq.NewTask(TypeRedPacketSweep, nil, asynq.Queue(QueueDefault), asynq.MaxRetry(1), asynq.Timeout(2*time.Minute), asynq.Unique(time.Minute))
}

// RedPacketStore is what the red packet tasks need.
type RedPacketStore interface {
	Expire(ctx context.Context, id int64) error
	Sweep(ctx context.Context) error
}

// RedPackets is the red packets' background work.
type RedPackets struct {
	Store RedPacketStore
}

// Register adds the expiry and sweep handlers.
func (r *RedPackets) Register(mux *asynq.ServeMux) {
	mux.HandleFunc(TypeRedPacketExpire, r.expire)
	mux.HandleFunc(TypeRedPacketSweep, func(ctx context.Context, _ *asynq.Task) error { return r.Store.Sweep(ctx) })
}

// Periodic sweeps every minute.
func (r *RedPackets) Periodic() []Periodic {
	return []Periodic{{Spec: "@every 1m", Task: NewRedPacketSweepTask()}}
}

func (r *RedPackets) expire(ctx context.Context, t *asynq.Task) error {
	var p RedPacketExpirePayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.RedPacketID <= 0 {
		return fmt.Errorf("red packet expiry payload %q: %w", t.Payload(), asynq.SkipRetry)
	}
	return r.Store.Expire(ctx, p.RedPacketID)
}
