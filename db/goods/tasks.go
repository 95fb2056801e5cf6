package goods

import (
	"context"
	"errors"
	"time"

	"github.com/hibiken/asynq"

	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/tasks"
)

// scheduleExpiry enqueues the order's expiry for OrderTTL from now. A failed
// enqueue is logged, not returned: the order exists and the periodic sweep
// of overdue orders expires it anyway.
func (s *Service) scheduleExpiry(ctx context.Context, o *model.Order) {
	if s.Tasks == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := s.Schedule(ctx, tasks.NewOrderExpireTask(o.ID), asynq.ProcessAt(backend.DueAt(o.ExpiresAt))); err != nil {
		s.Log.Warn("enqueue order expiry; the sweep will expire it", "order", o.ID, "err", err)
	}
}

// deleteExpiry drops a paid or cancelled order's expiry task. One already
// running finds the order closed and does nothing, so failures only cost a no-op run.
func (s *Service) deleteExpiry(ctx context.Context, orderID int64) {
	if s.Queue == nil {
		return
	}
	if err := s.Queue.DeleteTask(tasks.QueueOrderExpire, tasks.OrderExpireTaskID(orderID)); err != nil &&
		!errors.Is(err, asynq.ErrTaskNotFound) && !errors.Is(err, asynq.ErrQueueNotFound) {
		s.Log.Debug("delete order expiry", "order", orderID, "err", err)
	}
}

// scheduleSlotSync enqueues the stock sync of the slot for its end, so
// the store has the final stock as soon as the sale is over. The task ID names
// the end time: moving the slot schedules a new one.
func (s *Service) scheduleSlotSync(ctx context.Context, sl *model.Slot) {
	if s.Tasks == nil {
		return
	}
	err := s.Schedule(ctx, tasks.NewGoodsSyncTask(sl.ID), asynq.ProcessAt(sl.EndAt.Add(time.Second)),
		asynq.TaskID(tasks.SlotSyncTaskID(sl.ID, sl.EndAt)))
	if err != nil {
		s.Log.Warn("schedule slot-end stock sync; the periodic sync covers it", "slot", sl.ID, "err", err)
	}
}
