package tasks

import (
	"context"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
)

// TypeFlushRun moves pending claims, orders and coupons from Redis to SQLite on demand.
const TypeFlushRun = "flush:run"

// NewFlushRunTask asks a worker to flush now.
func NewFlushRunTask() *asynq.Task {
	return asynq.NewTask(TypeFlushRun, nil, asynq.Queue(QueueCritical), asynq.MaxRetry(3), asynq.Timeout(time.Minute))
}

// Flush runs the batch flush: every Interval in the worker (Asynq's scheduler
// cannot tick faster than once a second) and as a task on demand.
type Flush struct {
	// Run moves every promotion's pending records from Redis to SQLite once.
	Run      func(ctx context.Context) error
	Interval time.Duration
	Log      *slog.Logger
	// Sample, when set, takes the live charts' samples after each interval
	// flush (not after one on demand): one place that already ticks.
	Sample func(ctx context.Context) error
}

// Register adds the on-demand flush handler.
func (f *Flush) Register(mux *asynq.ServeMux) {
	mux.HandleFunc(TypeFlushRun, func(ctx context.Context, _ *asynq.Task) error { return f.Run(ctx) })
}

// Periodic is empty: the interval flush is Loop, not a scheduled task.
func (f *Flush) Periodic() []Periodic { return nil }

// Loop flushes every Interval until ctx ends, then once more so a clean
// shutdown leaves nothing behind in Redis.
func (f *Flush) Loop(ctx context.Context) {
	t := time.NewTicker(f.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			f.run(final)
			cancel()
			return
		case <-t.C:
			f.run(ctx)
			if f.Sample != nil {
				if err := f.Sample(ctx); err != nil && ctx.Err() == nil {
					f.Log.Warn("sample the live charts", "err", err)
				}
			}
		}
	}
}

func (f *Flush) run(ctx context.Context) {
	if err := f.Run(ctx); err != nil && ctx.Err() == nil {
		f.Log.Error("batch flush", "err", err)
	}
}
