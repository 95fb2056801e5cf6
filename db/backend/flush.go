package backend

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/rdb"
)

// FlushQueue is a crash-safe pipe from Redis to the durable store. Grab
// scripts RPUSH records onto Pending; the flush moves a batch onto Processing
// in one atomic step, writes it to the store in one transaction, and only
// then deletes Processing. A crash in between leaves the batch in Processing,
// and the next flush applies it again first, so apply must be idempotent
// (ON CONFLICT DO NOTHING, updates guarded by the row's state, keyed by the
// record's own ID): nothing is lost and nothing doubled. Apply a batch with
// set-based statements (sqldb's Stage and InsertRows: COPY on PostgreSQL).
// Both keys must share the item's hash tag.
type FlushQueue struct {
	Pending    string
	Processing string
}

// takeBatch moves up to ARGV[1] records from the head of the pending list to
// the processing list, unless processing already holds a batch left by a crash.
//
// KEYS[1] pending list, KEYS[2] processing list
// ARGV[1] batch size
// Returns the records now in processing (possibly the leftover batch), or an empty list.
var takeBatch = redis.NewScript(`
local left = redis.call('LRANGE', KEYS[2], 0, -1)
if #left > 0 then return left end
local recs = redis.call('LRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
if #recs == 0 then return recs end
redis.call('LTRIM', KEYS[1], #recs, -1)
redis.call('RPUSH', KEYS[2], unpack(recs))
return recs
`)

// TakeBatch moves the next batch of q to processing (or returns the batch a
// crash left there) without applying it; Flush calls it, and tests use it to
// stop a flush between the move and the commit.
func (b *Backend) TakeBatch(ctx context.Context, q FlushQueue) ([]string, error) {
	return takeBatch.Run(ctx, b.Redis, []string{q.Pending, q.Processing}, FlushBatchSize).StringSlice()
}

// FlushBatchSize is how many records one transaction of the durable store takes.
const FlushBatchSize = 500

// Flush drains q into the durable store, batch by batch, and returns how many records it applied.
// Two flushes of one queue must not run at once (the tasks make them unique).
func (b *Backend) Flush(ctx context.Context, q FlushQueue, apply func(tx *sql.Tx, records []string) error) (int, error) {
	total := 0
	for {
		recs, err := b.TakeBatch(ctx, q)
		if err != nil {
			return total, fmt.Errorf("take batch from %s: %w", q.Pending, err)
		}
		if len(recs) == 0 {
			return total, nil
		}
		if err := b.SQL.Tx(ctx, func(tx *sql.Tx) error { return apply(tx, recs) }); err != nil {
			return total, fmt.Errorf("apply batch from %s: %w", q.Pending, err)
		}
		if err := b.Redis.Del(ctx, q.Processing).Err(); err != nil {
			return total, fmt.Errorf("release batch of %s: %w", q.Pending, err)
		}
		total += len(recs)
	}
}

// FlushLockKey keeps one flusher at a time across worker processes.
const FlushLockKey = "seckill:flush:lock"

// flushLockTTL frees the lock of a flusher that died holding it.
const flushLockTTL = 30 * time.Second

// takeFlushLock takes the flush lock under a token of this acquisition's own,
// so that only this flusher can release it. It returns "" when another holds it.
func (b *Backend) takeFlushLock(ctx context.Context) (string, error) {
	token := rdb.NewRequestID()
	ok, err := b.Redis.SetNX(ctx, FlushLockKey, token, flushLockTTL).Result()
	if err != nil || !ok {
		return "", err
	}
	return token, nil
}

// FlushAll runs every promotion's flush step (each moves its pending records
// to the durable store). Only one process flushes at a time; a call that finds the lock
// taken returns at once. A failing step does not stop the others.
func (b *Backend) FlushAll(ctx context.Context, steps ...func(context.Context) error) error {
	token, err := b.takeFlushLock(ctx)
	if err != nil || token == "" {
		return err
	}
	defer func() {
		if released, err := rdb.ReleaseOwned(context.WithoutCancel(ctx), b.Redis, FlushLockKey, token); err != nil || !released {
			b.Log.Warn("flush outlived its lock; another flusher may have run alongside", "err", err)
		}
	}()
	var errs []error
	for _, step := range steps {
		errs = append(errs, step(ctx))
	}
	return errors.Join(errs...)
}

// FlushSetIDs reads a set of item IDs whose queues may hold records, dropping
// members that are not IDs so they are not read again.
func (b *Backend) FlushSetIDs(ctx context.Context, set string) ([]int64, error) {
	raw, err := b.Redis.SMembers(ctx, set).Result()
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", set, err)
	}
	ids := make([]int64, 0, len(raw))
	for _, m := range raw {
		id, err := strconv.ParseInt(m, 10, 64)
		if err != nil {
			b.Redis.SRem(ctx, set, m)
			continue
		}
		ids = append(ids, id)
	}
	return ids, nil
}
