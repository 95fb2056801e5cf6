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

// Task types the goods area enqueues from the Store; package tasks handles
// them (and re-exports these names). They live here because the grab path
// enqueues the expiry itself, and db must not import tasks.
const (
	TaskOrderExpire = "order:expire"
	TaskGoodsSync   = "goods:sync"
)

// goodsTaskQueue is tasks.QueueCritical: expiry must not wait behind reminders.
const goodsTaskQueue = "critical"

// OrderExpirePayload is the body of an order's expiry task.
type OrderExpirePayload struct {
	OrderID int64 `json:"order_id"`
}

// GoodsSyncPayload is the body of a stock sync task; SlotID 0 means every active goods.
type GoodsSyncPayload struct {
	SlotID int64 `json:"slot_id"`
}

// OrderExpireTaskID is the expiry task's ID, derived from the order ID: it is
// enqueued once per order and paying can find it to delete it.
func OrderExpireTaskID(orderID int64) string { return fmt.Sprintf("order:expire:%d", orderID) }

// NewOrderExpireTask is the expiry task of one order. It keeps retries, so a
// worker killed mid-task does not lose the expiry.
func NewOrderExpireTask(orderID int64) *asynq.Task {
	body, _ := json.Marshal(OrderExpirePayload{OrderID: orderID})
	return asynq.NewTask(TaskOrderExpire, body, asynq.Queue(goodsTaskQueue), asynq.MaxRetry(25), asynq.Timeout(30*time.Second),
		asynq.TaskID(OrderExpireTaskID(orderID)))
}

// NewGoodsSyncTask asks for a stock sync of one slot's goods (0: all active goods).
func NewGoodsSyncTask(slotID int64) *asynq.Task {
	body, _ := json.Marshal(GoodsSyncPayload{SlotID: slotID})
	return asynq.NewTask(TaskGoodsSync, body, asynq.Queue(goodsTaskQueue), asynq.MaxRetry(10), asynq.Timeout(time.Minute))
}

// scheduleExpiry enqueues the order's expiry for OrderTTL from now. A failed
// enqueue is logged, not returned: the order exists and the periodic sweep
// of overdue orders expires it anyway.
func (s *Store) scheduleExpiry(ctx context.Context, o *Order) {
	if s.Tasks == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_, err := s.Tasks.EnqueueContext(ctx, NewOrderExpireTask(o.ID), asynq.ProcessAt(backend.DueAt(o.ExpiresAt)))
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		s.Log.Warn("enqueue order expiry; the sweep will expire it", "order", o.ID, "err", err)
	}
}

// deleteExpiry drops a paid or cancelled order's expiry task. One already
// running finds the order closed and does nothing, so failures only cost a no-op run.
func (s *Store) deleteExpiry(ctx context.Context, orderID int64) {
	if s.Queue == nil {
		return
	}
	if err := s.Queue.DeleteTask(goodsTaskQueue, OrderExpireTaskID(orderID)); err != nil &&
		!errors.Is(err, asynq.ErrTaskNotFound) && !errors.Is(err, asynq.ErrQueueNotFound) {
		s.Log.Debug("delete order expiry", "order", orderID, "err", err)
	}
}

// scheduleSlotSync enqueues the stock sync of the slot for its end, so
// SQLite has the final stock as soon as the sale is over. The task ID names
// the end time: moving the slot schedules a new one.
func (s *Store) scheduleSlotSync(ctx context.Context, sl *Slot) {
	if s.Tasks == nil {
		return
	}
	id := fmt.Sprintf("goods:sync:slot:%d:%d", sl.ID, sl.EndAt.UnixMilli())
	_, err := s.Tasks.EnqueueContext(ctx, NewGoodsSyncTask(sl.ID), asynq.ProcessAt(sl.EndAt.Add(time.Second)), asynq.TaskID(id))
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		s.Log.Warn("schedule slot-end stock sync; the periodic sync covers it", "slot", sl.ID, "err", err)
	}
}
