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

// NewProviderCloseDueTask is one pass of TypeProviderCloseDue.
func NewProviderCloseDueTask() *asynq.Task {
	return asynq.NewTask(TypeProviderCloseDue, nil, asynq.Queue(QueueCritical), asynq.MaxRetry(0), asynq.Timeout(time.Minute))
}

// ProviderStore is what the provider's tasks need.
type ProviderStore interface {
	// CloseDue closes the due trades at the provider and settles their orders.
	CloseDue(ctx context.Context) (int, error)
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
}

// Periodic closes due trades every two seconds: an order held for a trade
// is released at most that long after its deadline, plus the provider's answer.
func (p *Payments) Periodic() []Periodic {
	return []Periodic{{Spec: "@every 2s", Task: NewProviderCloseDueTask(), Opts: []asynq.Option{asynq.Unique(time.Second)}}}
}
