// Package backend is what every area's service runs on: the durable store
// (SQLite or PostgreSQL), Redis (with the pipeliner of the hot path), live
// events, Asynq, the log and the clock. Each area's
// Service embeds one *Backend, so its methods read s.Redis, s.SQL and
// s.Now() directly.
package backend

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/db/rdb"
	"github.com/seckill/seckill/db/sqldb"
)

// Backend holds the parts every service shares. Fields may be nil where a
// part is optional: Pipe (scripts run one by one), Tasks and Queue (nothing scheduled: tests of pure Redis paths).
type Backend struct {
	SQL     *sqldb.DB
	Redis   redis.UniversalClient
	Pipe    *rdb.Pipeliner // coalesces concurrent grab scripts into pipelines
	Events  *live.Events
	Tasks   *asynq.Client    // schedules delayed work
	Queue   *asynq.Inspector // deletes scheduled work (a reminder whose start moved)
	Log     *slog.Logger
	Now     func() time.Time
	Flushes *FlushStats // what this process's flushes met (lease waits, takeovers, fenced batches); New sets it
}

// New returns a backend over the given stores with live events, the default
// log and the wall clock filled in.
func New(sql *sqldb.DB, redis redis.UniversalClient) *Backend {
	return &Backend{SQL: sql, Redis: redis, Events: live.New(redis), Log: slog.Default(), Now: time.Now, Flushes: new(FlushStats)}
}

// Eval runs a script whose change a shopper is told about (a grab, a pay,
// a cancel, a refund): through the pipeliner when there is one, where the
// answer waits until the change is on a replica where masters have them
// (REDIS_WAIT_REPLICAS; rdb.Durable), and past the wait's timeout is
// rdb.ErrNotReplicated (503 unavailable).
func (b *Backend) Eval(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	if b.Pipe != nil {
		return script.Run(rdb.Durable(ctx), b.Pipe.Client(), keys, args...)
	}
	return script.Run(ctx, b.Redis, keys, args...)
}

// Schedule enqueues task; one whose ID is taken was scheduled by an earlier
// call and counts as scheduled. The caller checks that Tasks is set.
func (b *Backend) Schedule(ctx context.Context, task *asynq.Task, opts ...asynq.Option) error {
	_, err := b.Tasks.EnqueueContext(ctx, task, opts...)
	if errors.Is(err, asynq.ErrTaskIDConflict) {
		return nil
	}
	return err
}

// Durable returns the client and context for a single command whose change
// a shopper is told about (a queue join, a spent proof of work): through
// the pipeliner when there is one, answered once the change is on a
// replica as Eval's scripts are.
func (b *Backend) Durable(ctx context.Context) (context.Context, redis.UniversalClient) {
	if b.Pipe != nil {
		return rdb.Durable(ctx), b.Pipe.Client()
	}
	return ctx, b.Redis
}

// Every calls f every d until ctx ends: the loops of the areas and the
// platform (a reload, a sync, a tick).
func Every(ctx context.Context, d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}
