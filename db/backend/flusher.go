package backend

import (
	"context"
	"time"

	"github.com/seckill/seckill/db/lifecycle"
)

// Flusher is a process's one batch flush. Each area registers its step (it
// moves the area's pending records from Redis to the durable store, through
// Flush, each queue a lane under its own lease: lease.go); the Flusher runs
// every step (FlushAll) every Interval while started, once more when stopped
// so a clean shutdown leaves nothing behind in Redis, and whenever Run is
// called. Flushers of several processes run at once: each flushes the lanes
// no other holds, so two workers flush different items side by side.
// Register before Start.
type Flusher struct {
	b        *Backend
	interval time.Duration
	steps    []func(context.Context) error
	after    []func(context.Context) error

	loop *lifecycle.Loop
}

// NewFlusher returns a flusher of b's queues that runs every interval once started.
func NewFlusher(b *Backend, interval time.Duration) *Flusher {
	f := &Flusher{b: b, interval: interval}
	f.loop = lifecycle.New("flusher", f.every)
	return f
}

// Register adds an area's flush step.
func (f *Flusher) Register(step func(context.Context) error) {
	f.steps = append(f.steps, step)
}

// AfterEach adds work done after each interval flush (not after Run): one
// place that already ticks, where goods takes its live charts' samples.
func (f *Flusher) AfterEach(fn func(context.Context) error) {
	f.after = append(f.after, fn)
}

// Run flushes every registered step once; a lane another flusher holds is
// skipped (its holder drains it).
func (f *Flusher) Run(ctx context.Context) error {
	return f.b.FlushAll(ctx, f.steps...)
}

// DrainWait is how long Drain waits, when ctx has no deadline, for a lane
// another flusher holds: long past a lapsed lease (FlushLeaseTTL), so a
// holder that died is taken over rather than waited out for ever.
const DrainWait = time.Minute

// Drain flushes every registered step once and returns when every record
// queued before it is in the store: a lane another flusher holds is waited
// for (WaitLanes) until that one drains it or lets its lease lapse, never
// skipped, up to ctx's deadline or DrainWait; past it, ErrLaneBusy. For an
// operator's command that reads the store right after (resend-orders), where
// Run could return while the records are in a worker's batch still.
func (f *Flusher) Drain(ctx context.Context) error {
	wait := DrainWait
	if d, ok := ctx.Deadline(); ok {
		wait = time.Until(d)
	}
	return f.Run(WaitLanes(ctx, wait))
}

// Loop is the interval flush: it flushes every interval until stopped, then
// once more, so a clean shutdown leaves nothing behind in Redis. Main starts
// it; Start and Stop are its.
func (f *Flusher) Loop() *lifecycle.Loop { return f.loop }

// Start flushes every interval in the background until Stop.
func (f *Flusher) Start() { f.loop.Start() }

// Stop ends the interval flushes after one last flush, and returns when it
// is done; a flusher never started does nothing.
func (f *Flusher) Stop() { f.loop.Stop() }

func (f *Flusher) every(ctx context.Context) {
	t := time.NewTicker(f.interval)
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
			for _, fn := range f.after {
				if err := fn(ctx); err != nil && ctx.Err() == nil {
					f.b.Log.Warn("after the batch flush", "err", err)
				}
			}
		}
	}
}

// run is Run that logs its error, unless ctx ended (shutting down).
func (f *Flusher) run(ctx context.Context) {
	if err := f.Run(ctx); err != nil && ctx.Err() == nil {
		f.b.Log.Error("batch flush", "err", err)
	}
}
