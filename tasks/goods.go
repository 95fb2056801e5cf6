package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
	"github.com/seckill/seckill/db"
)

// Goods task types. The Store enqueues order expiry (on the grab path) and
// the slot-end stock sync itself, so those two are defined in db.
const (
	TypeOrderExpire  = db.TaskOrderExpire
	TypeGoodsSync    = db.TaskGoodsSync
	TypeGoodsPreheat = "goods:preheat"
	TypeOrderSweep   = "order:sweep"
)

// How often the periodic goods work runs.
const (
	GoodsPreheatEvery = 5 * time.Second
	GoodsSyncEvery    = 5 * time.Second
	OrderSweepEvery   = 10 * time.Second
)

// NewOrderExpireTask is the expiry task of one order (enqueued with ProcessAt of its deadline, rounded up to a second).
func NewOrderExpireTask(orderID int64) *asynq.Task { return db.NewOrderExpireTask(orderID) }

// NewGoodsSyncTask syncs one slot's stock to SQLite (0: every active goods).
func NewGoodsSyncTask(slotID int64) *asynq.Task { return db.NewGoodsSyncTask(slotID) }

// NewGoodsPreheatTask loads goods of slots about to open into Redis.
func NewGoodsPreheatTask() *asynq.Task {
	return asynq.NewTask(TypeGoodsPreheat, nil, asynq.Queue(QueueCritical), asynq.MaxRetry(3), asynq.Timeout(time.Minute))
}

// NewOrderSweepTask expires overdue unpaid orders whose expiry task was lost.
func NewOrderSweepTask() *asynq.Task {
	return asynq.NewTask(TypeOrderSweep, nil, asynq.Queue(QueueDefault), asynq.MaxRetry(3), asynq.Timeout(time.Minute))
}

// GoodsStore is what the goods tasks need from the Store.
type GoodsStore interface {
	ExpireOrder(ctx context.Context, orderID int64) error
	PreheatGoods(ctx context.Context) (int, error)
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
		n, err := g.Store.PreheatGoods(ctx)
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
	var p db.OrderExpirePayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.OrderID <= 0 {
		return fmt.Errorf("order expiry payload %q: %w", t.Payload(), asynq.SkipRetry)
	}
	// Not yet due (clocks apart): the error makes Asynq retry it later.
	return g.Store.ExpireOrder(ctx, p.OrderID)
}

func (g *Goods) sync(ctx context.Context, t *asynq.Task) error {
	var p db.GoodsSyncPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.SlotID < 0 {
		return fmt.Errorf("stock sync payload %q: %w", t.Payload(), asynq.SkipRetry)
	}
	return g.Store.SyncStock(ctx, p.SlotID)
}
