package goods

import (
	"context"
	"time"

	"github.com/hibiken/asynq"

	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/tasks"
)

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
