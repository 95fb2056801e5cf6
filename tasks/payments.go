package tasks

import (
	"context"
	"time"

	"github.com/hibiken/asynq"
)

// TypeProviderCloseDue closes at the payment provider the trades of orders
// due to expire, then pays or releases each order, and asks again for
// refunds the provider did not answer.
const TypeProviderCloseDue = "payment:close-due"

// TypeProviderReconcile compares the provider's payments of the last day
// with the store (the seckill_payment_mismatches gauge reads the result).
const TypeProviderReconcile = "payment:reconcile"

// NewProviderCloseDueTask is one pass of TypeProviderCloseDue.
func NewProviderCloseDueTask() *asynq.Task {
	return asynq.NewTask(TypeProviderCloseDue, nil, asynq.Queue(QueueCritical), asynq.MaxRetry(0), asynq.Timeout(time.Minute))
}

// ProviderStore is what the provider's tasks need.
type ProviderStore interface {
	// CloseDue closes the due trades at the provider and settles their orders.
	CloseDue(ctx context.Context) (int, error)
	// ReconcileRecent compares the last day's payments at the provider with the store.
	ReconcileRecent(ctx context.Context) (int, error)
}

// Payments runs the payment provider's tasks.
type Payments struct {
	Store ProviderStore
}

// Register adds the provider's task handlers.
func (p *Payments) Register(mux *asynq.ServeMux) {
	mux.HandleFunc(TypeProviderCloseDue, func(ctx context.Context, _ *asynq.Task) error {
		_, err := p.Store.CloseDue(ctx)
		return err
	})
	mux.HandleFunc(TypeProviderReconcile, func(ctx context.Context, _ *asynq.Task) error {
		_, err := p.Store.ReconcileRecent(ctx)
		return err
	})
}

// Periodic closes due trades every two seconds (an order held for a trade
// is released at most that long after its deadline, plus the provider's
// answer) and reconciles the last day every quarter hour.
func (p *Payments) Periodic() []Periodic {
	return []Periodic{
		{Spec: "@every 2s", Task: NewProviderCloseDueTask(), Opts: []asynq.Option{asynq.Unique(time.Second)}},
		{Spec: "@every 15m", Task: asynq.NewTask(TypeProviderReconcile, nil, asynq.Queue(QueueLow), asynq.MaxRetry(1), asynq.Timeout(10*time.Minute)),
			Opts: []asynq.Option{asynq.Unique(10 * time.Minute)}},
	}
}
