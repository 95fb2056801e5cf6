package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// FlushQueue is a crash-safe pipe from Redis to SQLite. Grab scripts RPUSH
// records onto Pending; the flush moves a batch onto Processing in one atomic
// step, writes it to SQLite in one transaction, and only then deletes
// Processing. A crash in between leaves the batch in Processing, and the next
// flush applies it again first, so apply must be idempotent (INSERT OR IGNORE,
// upserts keyed by the record's own ID): nothing is lost and nothing doubled.
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

// FlushBatchSize is how many records one SQLite transaction takes.
const FlushBatchSize = 500

// Flush drains q into SQLite, batch by batch, and returns how many records it applied.
// Two flushes of one queue must not run at once (the tasks make them unique).
func (s *Store) Flush(ctx context.Context, q FlushQueue, apply func(tx *sql.Tx, records []string) error) (int, error) {
	total := 0
	for {
		recs, err := takeBatch.Run(ctx, s.Redis, []string{q.Pending, q.Processing}, FlushBatchSize).StringSlice()
		if err != nil {
			return total, fmt.Errorf("take batch from %s: %w", q.Pending, err)
		}
		if len(recs) == 0 {
			return total, nil
		}
		if err := s.SQL.Tx(ctx, func(tx *sql.Tx) error { return apply(tx, recs) }); err != nil {
			return total, fmt.Errorf("apply batch from %s: %w", q.Pending, err)
		}
		if err := s.Redis.Del(ctx, q.Processing).Err(); err != nil {
			return total, fmt.Errorf("release batch of %s: %w", q.Pending, err)
		}
		total += len(recs)
	}
}

// flushLockKey keeps one flusher at a time across worker processes.
const flushLockKey = "seckill:flush:lock"

// FlushAll moves every promotion's pending records to SQLite. Only one
// process flushes at a time; a call that finds the lock taken returns at once.
// Each promotion adds its own flush step here.
func (s *Store) FlushAll(ctx context.Context) error {
	ok, err := s.Redis.SetNX(ctx, flushLockKey, "1", 30*time.Second).Result()
	if err != nil || !ok {
		return err
	}
	defer s.Redis.Del(context.WithoutCancel(ctx), flushLockKey)
	steps := []func(context.Context) error{
		// promotions' flush steps, one line each
		s.flushRedPackets,
		s.flushOrders,
		s.flushCoupons,
	}
	var errs []error
	for _, step := range steps {
		errs = append(errs, step(ctx))
	}
	return errors.Join(errs...)
}

// flushSetIDs reads a set of item IDs whose queues may hold records, dropping
// members that are not IDs so they are not read again.
func (s *Store) flushSetIDs(ctx context.Context, set string) ([]int64, error) {
	raw, err := s.Redis.SMembers(ctx, set).Result()
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", set, err)
	}
	ids := make([]int64, 0, len(raw))
	for _, m := range raw {
		id, err := strconv.ParseInt(m, 10, 64)
		if err != nil {
			s.Redis.SRem(ctx, set, m)
			continue
		}
		ids = append(ids, id)
	}
	return ids, nil
}
