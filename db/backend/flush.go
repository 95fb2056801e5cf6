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
// Both keys must share the item's hash tag; the lane's lease key
// (LeaseKey) lives under it too. A queue is a flush lane: each has its own
// lease and fencing number (lease.go), so different lanes flush at once.
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
// many records it applied. It flushes q's lane under the lane's lease (see
// lease.go): each batch commits only while the lease is still this
// flusher's, so two flushes of one queue never both commit, while other
// lanes are flushed by other flushers at the same time. An empty lane is
// skipped without its lease; a lane another flusher holds is skipped (that
// one drains it: 0 records, no error), or waited for under WaitLanes.
func (b *Backend) Flush(ctx context.Context, q FlushQueue, apply func(tx *sql.Tx, records []string) error) (int, error) {
	l := leaseOf(ctx, q.Pending)
	if l == nil {
		var err error
		if l, err = b.takeLane(ctx, q); err != nil || l == nil {
			return 0, err
		}
		var release func()
		ctx, release = b.holdLease(ctx, q, l)
		defer release()
	}
	total, err := b.flushBatches(ctx, q, l, apply)
	if err != nil && context.Cause(ctx) == errLeaseLost {
		err = errors.Join(err, errLeaseLost)
	}
	return total, err
}

// takeLane takes q's lane lease when the lane holds records. It returns nil
// when the lane is empty or another flusher holds it; under WaitLanes it
// waits, a moment at a time, until the lease is free or the lane empty, and
// past the wait returns ErrLaneBusy.
func (b *Backend) takeLane(ctx context.Context, q FlushQueue) (*lease, error) {
	until, wait := ctx.Value(waitKey{}).(time.Time)
	for counted := false; ; {
		n, err := b.Redis.Exists(ctx, q.Pending, q.Processing).Result()
		if err != nil || n == 0 {
			return nil, err
		}
		l, err := b.takeLease(ctx, q)
		if err != nil || l != nil {
			return l, err
		}
		if !counted {
			counted = true
			b.Flushes.LeaseWaits.Add(1)
			b.Log.Debug("flush lane held by another flusher; it drains the lane", "lane", q.Pending)
		}
		if !wait {
			return nil, nil
		}
		if time.Now().After(until) {
			return nil, fmt.Errorf("flush %s: %w", q.Pending, ErrLaneBusy)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
	}
}

type waitKey struct{}

type batchTakenKey struct{}

// BatchTaken makes the flushes under ctx show f each batch they take, before
// they apply it: the flusher holds the lane's lease and fencing number and
// the batch is in processing. Tests stand a flusher still there, where a
// Redis restart or a pause meets it.
func BatchTaken(ctx context.Context, f func(records []string)) context.Context {
	return context.WithValue(ctx, batchTakenKey{}, f)
}

// WaitLanes makes the flushes under ctx wait up to d for a lane another
// flusher holds, instead of skipping it: for a caller that needs the
// records in the store now (a checkout, a refund), not by the next tick.
func WaitLanes(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, waitKey{}, time.Now().Add(d))
}

// flushBatches is Flush under the lane's lease l.
func (b *Backend) flushBatches(ctx context.Context, q FlushQueue, l *lease, apply func(tx *sql.Tx, records []string) error) (int, error) {
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
		if f, ok := ctx.Value(batchTakenKey{}).(func([]string)); ok {
			f(recs)
		}
		err = b.SQL.TxQuiet(ctx, FlushLeaseTTL, func(tx *sql.Tx) error {
			if err := apply(tx, recs); err != nil {
				return err
			}
			return commitFence(ctx, tx, l)
		})
		if errors.Is(err, errLeaseLost) {
			b.Flushes.Fenced.Add(1)
		}
		if err != nil {
			return total, fmt.Errorf("apply batch from %s: %w", q.Pending, err)
		}
		b.Flushes.Records.Add(int64(len(recs)))
		b.Flushes.LastCommit.Store(time.Now().UnixMilli())
		if err := b.releaseBatch(ctx, q, recs); err != nil {
			return total, fmt.Errorf("release batch of %s: %w", q.Pending, err)
		}
		total += len(recs)
	}
}

// FlushAll runs every promotion's flush step (each moves its pending
// records to the durable store, lane by lane, each lane under its own
// lease: lease.go). A failing step does not stop the others.
func (b *Backend) FlushAll(ctx context.Context, steps ...func(context.Context) error) error {
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

// RequeueLua is the Lua of a resend (a restore's `seckill resend-orders`):
// requeue(queue, order, recs) pushes the records recs (a table keyed by
// each record's place, a number) onto the flush queue's pending list in
// the order of their places (the list order), in RPUSHes of 1000, and
// returns how many it pushed; requeue_hash(queue, hash) does so for a hash
// whose fields are the places and whose values are the records. The apply
// of every queue is idempotent, so a record the store holds already
// changes nothing.
const RequeueLua = `
local function requeue(queue, order, recs)
	table.sort(order)
	local chunk = {}
	for _, at in ipairs(order) do
		chunk[#chunk + 1] = recs[at]
		if #chunk == 1000 then
			redis.call('RPUSH', queue, unpack(chunk))
			chunk = {}
		end
	end
	if #chunk > 0 then redis.call('RPUSH', queue, unpack(chunk)) end
	return #order
end
local function requeue_hash(queue, hash)
	local all = redis.call('HGETALL', hash)
	local order, recs = {}, {}
	for i = 1, #all, 2 do
		local at = tonumber(all[i])
		order[#order + 1] = at
		recs[at] = all[i + 1]
	end
	return requeue(queue, order, recs)
end
`
