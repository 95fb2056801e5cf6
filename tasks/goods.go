package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
)

// Goods task types. The goods service enqueues order expiry (on the grab
// path) and the slot-end stock sync itself.
const (
	TypeOrderExpire  = "order:expire"
	TypeGoodsSync    = "goods:sync"
	TypeGoodsPreheat = "goods:preheat"
	TypeOrderSweep   = "order:sweep"
)

// QueueOrderExpire is the queue of expiry tasks: expiry must not wait behind
// reminders. Paying deletes the order's task from it.
const QueueOrderExpire = QueueCritical

// How often the periodic goods work runs.
const (
	GoodsPreheatEvery = 5 * time.Second
	GoodsSyncEvery    = 5 * time.Second
	OrderSweepEvery   = 10 * time.Second
)

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

// NewOrderExpireTask is the expiry task of one order (enqueued with
// ProcessAt of its deadline, rounded up to a second). It keeps retries, so
// a worker killed mid-task does not lose the expiry.
func NewOrderExpireTask(orderID int64) *asynq.Task {
	body, _ := json.Marshal(OrderExpirePayload{OrderID: orderID})
	return asynq.NewTask(TypeOrderExpire, body, asynq.Queue(QueueOrderExpire), asynq.MaxRetry(25), asynq.Timeout(30*time.Second),
		asynq.TaskID(OrderExpireTaskID(orderID)))
}

// NewGoodsSyncTask syncs one slot's stock to SQLite (0: every active goods).
func NewGoodsSyncTask(slotID int64) *asynq.Task {
	body, _ := json.Marshal(GoodsSyncPayload{SlotID: slotID})
	return asynq.NewTask(TypeGoodsSync, body, asynq.Queue(QueueCritical), asynq.MaxRetry(10), asynq.Timeout(time.Minute))
}

// SlotSyncTaskID is the ID of the stock sync at a slot's end. It names the
// end time, so moving the slot schedules a new sync beside the old one.
func SlotSyncTaskID(slotID int64, end time.Time) string {
	return fmt.Sprintf("goods:sync:slot:%d:%d", slotID, end.UnixMilli())
}

// NewGoodsPreheatTask loads goods of slots about to open into Redis.
func NewGoodsPreheatTask() *asynq.Task {
	return asynq.NewTask(TypeGoodsPreheat, nil, asynq.Queue(QueueCritical), asynq.MaxRetry(3), asynq.Timeout(time.Minute))
}

// NewOrderSweepTask expires overdue unpaid orders whose expiry task was lost.
func NewOrderSweepTask() *asynq.Task {
	return asynq.NewTask(TypeOrderSweep, nil, asynq.Queue(QueueDefault), asynq.MaxRetry(3), asynq.Timeout(time.Minute))
}

// GoodsStore is what the goods tasks need from the goods service.
type GoodsStore interface {
	ExpireOrder(ctx context.Context, orderID int64) error
	Preheat(ctx context.Context) (int, error)
	SyncStock(ctx context.Context, slotID int64) error
	SweepOverdueOrders(ctx context.Context) (int, error)
}

// Goods is the background work of seckill goods: order expiry, preheat,
// stock sync and the sweep of overdue orders. Every handler is idempotent.
type Goods struct {
	Store GoodsStore
	Log   *slog.Logger
}

// Register adds the goods handlers.
func (g *Goods) Register(mux *asynq.ServeMux) {
	mux.HandleFunc(TypeOrderExpire, g.expire)
	mux.HandleFunc(TypeGoodsSync, g.sync)
	mux.HandleFunc(TypeGoodsPreheat, func(ctx context.Context, _ *asynq.Task) error {
		n, err := g.Store.Preheat(ctx)
		if n > 0 {
			g.Log.Info("preheated goods", "loaded", n)
		}
		return err
	})
	mux.HandleFunc(TypeOrderSweep, func(ctx context.Context, _ *asynq.Task) error {
		n, err := g.Store.SweepOverdueOrders(ctx)
		if n > 0 {
			g.Log.Info("swept overdue orders", "expired", n)
		}
		return err
	})
}

// Periodic runs preheat, stock sync and the sweep on a schedule; Unique
// keeps several schedulers (one per worker process) from piling them up.
func (g *Goods) Periodic() []Periodic {
	every := func(d time.Duration, t *asynq.Task) Periodic {
		return Periodic{Spec: fmt.Sprintf("@every %s", d), Task: t, Opts: []asynq.Option{asynq.Unique(d)}}
	}
	return []Periodic{
		every(GoodsPreheatEvery, NewGoodsPreheatTask()),
		every(GoodsSyncEvery, NewGoodsSyncTask(0)),
		every(OrderSweepEvery, NewOrderSweepTask()),
	}
}

// expire expires one order if it is still unpaid; paid, closed or unknown
// orders are left alone, so a repeated delivery does nothing.
func (g *Goods) expire(ctx context.Context, t *asynq.Task) error {
	var p OrderExpirePayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.OrderID <= 0 {
		return fmt.Errorf("order expiry payload %q: %w", t.Payload(), asynq.SkipRetry)
	}
	// Not yet due (clocks apart): the error makes Asynq retry it later.
	return g.Store.ExpireOrder(ctx, p.OrderID)
}

func (g *Goods) sync(ctx context.Context, t *asynq.Task) error {
	var p GoodsSyncPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.SlotID < 0 {
		return fmt.Errorf("stock sync payload %q: %w", t.Payload(), asynq.SkipRetry)
	}
	return g.Store.SyncStock(ctx, p.SlotID)
}
