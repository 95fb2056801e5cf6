package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
)

// Goods task types. The goods service enqueues the slot-end stock sync
// itself; order expiry is the periodic TypeOrderExpireDue. TypeOrderExpire
// (one task per order) and TypeOrderSweep are what earlier releases
// enqueued: their handlers stay for tasks still queued from them.
const (
	TypeOrderExpireDue = "order:expire-due"
	TypeOrderExpire    = "order:expire"
	TypeGoodsSync      = "goods:sync"
	TypeGoodsPreheat   = "goods:preheat"
	TypeOrderSweep     = "order:sweep"
)

// QueueOrderExpire is the queue of expiry work: expiry must not wait behind reminders.
const QueueOrderExpire = QueueCritical

// How often the periodic goods work runs. OrderExpireEvery is the expiry
// tick: an order expires within a tick of its deadline.
const (
	GoodsPreheatEvery = 5 * time.Second
	GoodsSyncEvery    = 5 * time.Second
	OrderExpireEvery  = time.Second
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

// NewOrderExpireDueTask is one expiry tick: it expires every unpaid order
// past its deadline, in batches. It is not retried (the next tick is a
// second away) and its result, the number expired, stays visible in Asynqmon
// for ten minutes.
func NewOrderExpireDueTask() *asynq.Task {
	return asynq.NewTask(TypeOrderExpireDue, nil, asynq.Queue(QueueOrderExpire), asynq.MaxRetry(0), asynq.Timeout(30*time.Second),
		asynq.Retention(10*time.Minute))
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

// GoodsStore is what the goods tasks need from the goods service.
type GoodsStore interface {
	ExpireOrder(ctx context.Context, orderID int64) error
	Preheat(ctx context.Context) (int, error)
	SyncStock(ctx context.Context, slotID int64) error
	ExpireDue(ctx context.Context) (int, error)
}

// Goods is the background work of seckill goods: order expiry, preheat and
// stock sync. Every handler is idempotent.
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
	mux.HandleFunc(TypeOrderExpireDue, g.expireDue)
	mux.HandleFunc(TypeOrderSweep, g.expireDue)
}

// Periodic runs preheat, stock sync and the expiry tick on a schedule;
// Unique keeps several schedulers (one per worker process) from piling them
// up, and the expiry's own lock keeps its ticks from overlapping.
func (g *Goods) Periodic() []Periodic {
	every := func(d time.Duration, t *asynq.Task) Periodic {
		return Periodic{Spec: fmt.Sprintf("@every %s", d), Task: t, Opts: []asynq.Option{asynq.Unique(d)}}
	}
	return []Periodic{
		every(GoodsPreheatEvery, NewGoodsPreheatTask()),
		every(GoodsSyncEvery, NewGoodsSyncTask(0)),
		every(OrderExpireEvery, NewOrderExpireDueTask()),
	}
}

// expireDue is one expiry tick; Asynqmon shows how many orders it expired.
func (g *Goods) expireDue(ctx context.Context, t *asynq.Task) error {
	n, err := g.Store.ExpireDue(ctx)
	if n > 0 {
		g.Log.Debug("expired due orders", "expired", n)
		if w := t.ResultWriter(); w != nil {
			fmt.Fprintf(w, "expired %d orders", n)
		}
	}
	return err
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
