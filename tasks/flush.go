package tasks

import (
	"context"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckill/seckill/db/backend"
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

// RegisterFlushMetrics adds the flush lease's series, read from st at each
// scrape: lease waits, batches taken over, batches fenced off, and the last
// commit (seconds since the last durable write: time() minus it).
func RegisterFlushMetrics(reg prometheus.Registerer, st *backend.FlushStats) {
	counter := func(name, help string, v func() int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(v()) })
	}
	reg.MustRegister(
		counter("seckill_flush_lease_waits_total", "Flushes that found the flush lease held by another flusher.", st.LeaseWaits.Load),
		counter("seckill_flush_takeovers_total", "Flush batches found in processing, left by a flusher that died, stalled or failed, and applied.", st.Takeovers.Load),
		counter("seckill_flush_fenced_total", "Flush batches refused at commit because a newer lease holder had started.", st.Fenced.Load),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "seckill_flush_last_commit_timestamp_seconds",
			Help: "When this process last committed a flush batch to the durable store (Unix seconds; 0: never).",
		}, func() float64 { return float64(st.LastCommit.Load()) / 1000 }),
	)
}
