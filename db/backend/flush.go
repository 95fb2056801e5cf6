package backend

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
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
// the processing list, unless processing already holds a batch left by a
// crash, a lost lease or a failed commit. It always writes (a leftover
// batch's first record is set again), so the WAIT the pipeliner sends behind
// it covers this call: once a replica holds it, the replica holds every
// record of the batch too (a replica applies the master's changes in order),
// and the durable store never takes a change a failover could lose.
//
// KEYS[1] pending list, KEYS[2] processing list
// ARGV[1] batch size
// Returns '1' followed by the leftover batch in processing, or '0' followed
// by the records just moved (none when pending is empty).
var takeBatch = redis.NewScript(`
local left = redis.call('LRANGE', KEYS[2], 0, -1)
if #left > 0 then
	redis.call('LSET', KEYS[2], 0, left[1])
	table.insert(left, 1, '1')
	return left
end
local recs = redis.call('LRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
if #recs > 0 then
	redis.call('LTRIM', KEYS[1], #recs, -1)
	redis.call('RPUSH', KEYS[2], unpack(recs))
end
table.insert(recs, 1, '0')
return recs
`)

// TakeBatch moves the next batch of q to processing (or returns the batch a
// crash left there) without applying it; Flush calls it, and tests use it to
// stop a flush between the move and the commit.
func (b *Backend) TakeBatch(ctx context.Context, q FlushQueue) ([]string, error) {
	recs, _, err := b.takeBatch(ctx, q)
	return recs, err
}

// takeBatch is TakeBatch that also says whether the batch was left over.
func (b *Backend) takeBatch(ctx context.Context, q FlushQueue) (recs []string, leftover bool, err error) {
	out, err := b.Eval(ctx, takeBatch, []string{q.Pending, q.Processing}, FlushBatchSize).StringSlice()
	if err != nil || len(out) == 0 {
		return nil, false, err
	}
	return out[1:], out[0] == "1", nil
}

// FlushBatchSize is how many records one transaction of the durable store takes.
const FlushBatchSize = 500

// Flush drains q into the durable store, batch by batch, and returns how
// many records it applied. Under FlushAll's lease each batch commits only
// while the lease is still this flusher's (see lease.go); two flushes of
// one queue must not run at once, which the lease ensures.
func (b *Backend) Flush(ctx context.Context, q FlushQueue, apply func(tx *sql.Tx, records []string) error) (int, error) {
	l := leaseOf(ctx)
	total := 0
	for {
		recs, leftover, err := b.takeBatch(ctx, q)
		if err != nil {
			return total, fmt.Errorf("take batch from %s: %w", q.Pending, err)
		}
		if len(recs) == 0 {
			return total, nil
		}
		if leftover {
			b.Flushes.Takeovers.Add(1)
		}
		err = b.SQL.TxQuiet(ctx, FlushLeaseTTL, func(tx *sql.Tx) error {
			if err := apply(tx, recs); err != nil {
				return err
			}
			if l != nil {
				return commitFence(ctx, tx, l)
			}
			return nil
		})
		if errors.Is(err, errLeaseLost) {
			b.Flushes.Fenced.Add(1)
		}
		if err != nil {
			return total, fmt.Errorf("apply batch from %s: %w", q.Pending, err)
		}
		b.Flushes.LastCommit.Store(time.Now().UnixMilli())
		if err := b.releaseBatch(ctx, q, recs); err != nil {
			return total, fmt.Errorf("release batch of %s: %w", q.Pending, err)
		}
		total += len(recs)
	}
}

// FlushAll runs every promotion's flush step (each moves its pending
// records to the durable store) under the flush lease (lease.go). A call
// that finds the lease taken returns at once: its holder drains every
// queue. A failing step does not stop the others.
func (b *Backend) FlushAll(ctx context.Context, steps ...func(context.Context) error) error {
	l, err := b.takeLease(ctx)
	if err != nil {
		return err
	}
	if l == nil {
		b.Flushes.LeaseWaits.Add(1)
		b.Log.Debug("flush lease held by another flusher; it drains the queues")
		return nil
	}
	ctx, cancel := context.WithCancelCause(context.WithValue(ctx, leaseKey{}, l))
	kept := make(chan struct{})
	go func() { defer close(kept); b.keepLease(ctx, l, func() { cancel(errLeaseLost) }) }()
	defer func() {
		cancel(nil)
		<-kept
		b.releaseLease(ctx, l)
	}()
	var errs []error
	for _, step := range steps {
		errs = append(errs, step(ctx))
	}
	if context.Cause(ctx) == errLeaseLost {
		errs = append(errs, errLeaseLost)
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
