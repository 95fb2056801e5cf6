package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/seckill/seckill/db"
)

// Red packet task types. The Store enqueues the expiry itself at creation,
// so that one is defined in db.
const (
	// TypeRedPacketExpire refunds a packet's unclaimed shares at its expiry.
	TypeRedPacketExpire = db.TaskRedPacketExpire
	// TypeRedPacketSweep expires overdue packets whose task was lost and reloads packets Redis lost.
	TypeRedPacketSweep = "redpacket:sweep"
)

// NewRedPacketExpireTask runs at the packet's expiry (see db.NewRedPacketExpireTask).
func NewRedPacketExpireTask(id int64, at time.Time) *asynq.Task {
	return db.NewRedPacketExpireTask(id, at)
}

// NewRedPacketSweepTask repairs red packets left behind by a crash.
func NewRedPacketSweepTask() *asynq.Task {
	return asynq.NewTask(TypeRedPacketSweep, nil, asynq.Queue(QueueDefault), asynq.MaxRetry(1), asynq.Timeout(2*time.Minute), asynq.Unique(time.Minute))
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
	var p db.RedPacketExpirePayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.RedPacketID <= 0 {
		return fmt.Errorf("red packet expiry payload %q: %w", t.Payload(), asynq.SkipRetry)
	}
	return r.Store.ExpireRedPacket(ctx, p.RedPacketID)
}
