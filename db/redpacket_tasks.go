package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/seckill/seckill/db/backend"
)

// TaskRedPacketExpire refunds a packet's unclaimed shares at its expiry. The
// Store enqueues it at creation, so it is defined here beside the goods' tasks.
const TaskRedPacketExpire = "redpacket:expire"

// RedPacketExpirePayload is the body of a packet's expiry task.
type RedPacketExpirePayload struct {
	RedPacketID int64 `json:"redpacket_id"`
}

// NewRedPacketExpireTask runs at the packet's expiry. Its task ID comes from
// the packet ID, so scheduling it twice keeps one; it keeps retries because
// the refund must happen.
func NewRedPacketExpireTask(id int64, at time.Time) *asynq.Task {
	payload, _ := json.Marshal(RedPacketExpirePayload{RedPacketID: id})
	return asynq.NewTask(TaskRedPacketExpire, payload,
		asynq.ProcessAt(backend.DueAt(at)), asynq.TaskID(fmt.Sprintf("redpacket:expire:%d", id)),
		asynq.Queue("critical"), asynq.MaxRetry(10), asynq.Timeout(time.Minute), asynq.Retention(24*time.Hour))
}

// scheduleRedPacketExpiry enqueues the packet's expiry. A failure is logged,
// not returned: the packet is live and the sweep expires overdue packets whose
// task never came.
func (s *Store) scheduleRedPacketExpiry(ctx context.Context, p *RedPacket) {
	if s.Tasks == nil {
		return
	}
	_, err := s.Tasks.EnqueueContext(ctx, NewRedPacketExpireTask(p.ID, p.ExpiresAt))
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		s.Log.Warn("schedule red packet expiry", "redpacket", p.ID, "err", err)
	}
}
