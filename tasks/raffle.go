package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
)

// Raffle task types: the draw of one raffle goods, scheduled at its sale's
// start, and the periodic sweep that draws raffles whose draw was missed
// (no worker then, the slot moved) and settles the drawn ones: makes the
// winners' orders, marks paid ones and passes the units of orders that
// expired or were cancelled to the next entries in the draw's order.
const (
	TypeRaffleDraw  = "raffle:draw"
	TypeRaffleSweep = "raffle:sweep"
)

// RaffleSweepEvery is how often the sweep runs: a unit passed on reaches the next entry within about this.
const RaffleSweepEvery = time.Second

// RaffleDrawPayload names the raffle goods to draw.
type RaffleDrawPayload struct {
	GoodsID int64 `json:"goods_id"`
}

// RaffleDrawTaskID is the draw task's ID: one per goods and start time, so
// scheduling again enqueues nothing new and a moved start schedules a new one.
func RaffleDrawTaskID(goodsID int64, start time.Time) string {
	return fmt.Sprintf("raffle:draw:%d:%d", goodsID, start.UnixMilli())
}

// NewRaffleDrawTask is the draw of one raffle (enqueued with ProcessAt its
// sale's start). It keeps retries: a draw must be made. Running it again
// does nothing (the store's drawn marker).
func NewRaffleDrawTask(goodsID int64) *asynq.Task {
	body, _ := json.Marshal(RaffleDrawPayload{GoodsID: goodsID})
	return asynq.NewTask(TypeRaffleDraw, body, asynq.Queue(QueueCritical), asynq.MaxRetry(25), asynq.Timeout(time.Minute),
		asynq.Retention(time.Hour))
}

// NewRaffleSweepTask draws raffles due and settles drawn ones.
func NewRaffleSweepTask() *asynq.Task {
	return asynq.NewTask(TypeRaffleSweep, nil, asynq.Queue(QueueCritical), asynq.MaxRetry(0), asynq.Timeout(30*time.Second))
}

// RaffleStore is what the raffle tasks need from the goods service.
type RaffleStore interface {
	// DrawRaffle makes the goods' draw once its sale started (exactly once; false: not made now).
	DrawRaffle(ctx context.Context, goodsID int64) (bool, error)
	// SweepRaffles draws raffles due and settles drawn ones.
	SweepRaffles(ctx context.Context) error
}

// Raffle runs the raffle's tasks.
type Raffle struct {
	Store RaffleStore
	Log   *slog.Logger
}

// Register adds the raffle handlers.
func (r *Raffle) Register(mux *asynq.ServeMux) {
	mux.HandleFunc(TypeRaffleDraw, func(ctx context.Context, t *asynq.Task) error {
		var p RaffleDrawPayload
		if err := json.Unmarshal(t.Payload(), &p); err != nil || p.GoodsID <= 0 {
			return fmt.Errorf("raffle draw payload %q: %w", t.Payload(), asynq.SkipRetry)
		}
		drawn, err := r.Store.DrawRaffle(ctx, p.GoodsID)
		if drawn {
			r.Log.Info("raffle drawn", "goods", p.GoodsID)
		}
		return err
	})
	mux.HandleFunc(TypeRaffleSweep, func(ctx context.Context, _ *asynq.Task) error {
		return r.Store.SweepRaffles(ctx)
	})
}

// Periodic runs the sweep every RaffleSweepEvery.
func (r *Raffle) Periodic() []Periodic {
	return []Periodic{{Spec: fmt.Sprintf("@every %s", RaffleSweepEvery), Task: NewRaffleSweepTask(),
		Opts: []asynq.Option{asynq.Unique(RaffleSweepEvery)}}}
}
