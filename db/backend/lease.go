package backend

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db/rdb"
)

// Each flush lane has a lease of its own. A lane is one queue (one item's,
// or one bucket's: "goods:42", "redpacket:7", "coupon:3"), so two flushers
// (two worker processes) flush different items at once, while one lane is
// flushed by one flusher at a time across processes, and a dead or paused
// one is replaced within FlushLeaseTTL:
//
//  1. A flusher takes the lane's lease (rdb.TakeOwned: SET NX GET PX
//     FlushLeaseTTL of the lane's lease key, under the queue's hash tag,
//     with a token of its own, so a SET go-redis sends again finds its
//     own lease) and then the lane's next fencing number from the durable store
//     (the lane's row of flush_fences, one upsert … RETURNING), so the
//     lane's newest holder always holds its highest number.
//  2. While it works, it renews the lease every third of the TTL; a renewal
//     that finds the lease gone or another's cancels the lane's flush.
//  3. Each batch commits only if its last statement finds the lane's
//     fencing number still the holder's (commitFence). A flusher that comes
//     back after its successor took the lane (a SIGSTOP, a long GC) cannot
//     commit again: the batch it held stays in processing, where the
//     successor found it already. Batches commit in TxQuiet, so a paused
//     flusher's open transaction is ended by the database within the TTL
//     and holds no row its successor needs.
//  4. Releasing the batch's processing list is a compare-and-delete of the
//     batch it applied, and releasing the lease a compare-and-delete of its
//     token: a late flusher frees neither its successor's batch nor lease.
//  5. Whoever rebuilds Redis from the store after Redis lost an item (a
//     restart without persistence) first takes the item's lanes' next
//     fencing numbers (FenceLanes), as a successor would: a batch taken
//     from the Redis that was lost has then committed, and the rebuild reads
//     it, or never commits. Without it a flusher still at work when Redis
//     came back empty could commit after the rebuild's read, and the units
//     its orders hold would be sold again.
//
// A flush that finds a lane's lease taken skips that lane (its holder
// drains it) and counts a lease wait; one under WaitLanes waits for it.

// LeaseSuffix ends the key of a lane's lease: the queue's pending key and
// this, so the lease lives in the queue's hash slot.
const LeaseSuffix = ":lease"

// LeaseKey is the key of q's lane lease: the token of the flusher at work.
func LeaseKey(q FlushQueue) string { return q.Pending + LeaseSuffix }

// FlushLeaseTTL is how long a lease lasts unless renewed: a flusher that
// died or stopped holding it is replaced within this time.
const FlushLeaseTTL = 2 * time.Second

// FlushStats counts what this process's flushes met; /metrics shows them.
type FlushStats struct {
	LeaseWaits atomic.Int64 // lane flushes that found the lane's lease held by another flusher
	Takeovers  atomic.Int64 // batches found in processing: left by a flusher that died, stalled or failed
	Fenced     atomic.Int64 // batches refused at commit: a newer holder of the lane had started
	Records    atomic.Int64 // records this process committed to the durable store (rows/s: its rate)
	LastCommit atomic.Int64 // when this process last committed a batch (Unix ms; 0: never)
}

// errLeaseLost ends a lane's flush whose lease passed to another flusher.
var errLeaseLost = errors.New("the lane's flush lease passed to another flusher")

// ErrLaneBusy is a flush under WaitLanes whose lane another flusher held
// for the whole wait.
var ErrLaneBusy = errors.New("another flusher holds the lane")

// lease is one holding of a lane's lease.
type lease struct {
	lane  string // the queue's pending key: names the lane's fence row
	token string
	fence int64
}

type leaseKey struct{}

// leaseOf is the lease of lane the caller already holds (tests take one
// with StaleLease), nil when the flush is to take it.
func leaseOf(ctx context.Context, lane string) *lease {
	l, _ := ctx.Value(leaseKey{}).(*lease)
	if l == nil || l.lane != lane {
		return nil
	}
	return l
}

// takeLease takes q's lane lease and the lane's next fencing number, or
// returns nil when another flusher holds the lease.
func (b *Backend) takeLease(ctx context.Context, q FlushQueue) (*lease, error) {
	l := &lease{lane: q.Pending, token: rdb.NewRequestID()}
	ok, err := rdb.TakeOwned(ctx, b.Redis, LeaseKey(q), l.token, FlushLeaseTTL)
	if err != nil || !ok {
		return nil, err
	}
	if l.fence, err = b.nextFence(ctx, l.lane); err != nil {
		b.releaseLease(ctx, q, l)
		return nil, err
	}
	return l, nil
}

// nextFence takes the lane's next fencing number from the durable store.
func (b *Backend) nextFence(ctx context.Context, lane string) (int64, error) {
	var fence int64
	err := b.SQL.W.QueryRowContext(ctx, `INSERT INTO flush_fences (name, fence) VALUES (?, 1)
		ON CONFLICT (name) DO UPDATE SET fence = flush_fences.fence + 1 RETURNING fence`, lane).Scan(&fence)
	if err != nil {
		return 0, fmt.Errorf("take a fencing number of %s: %w", lane, err)
	}
	return fence, nil
}

// FenceLanes takes the next fencing number of each of qs's lanes, with no
// lease (step 5 above): a batch of those lanes that a flusher holds now
// has committed when this returns (commitFence holds the lane's row until
// its commit, so the upsert waits), or it never will. A flush that starts
// afterwards takes a newer number and goes on as usual.
func (b *Backend) FenceLanes(ctx context.Context, qs ...FlushQueue) error {
	for _, q := range qs {
		if _, err := b.nextFence(ctx, q.Pending); err != nil {
			return err
		}
	}
	return nil
}

// holdLease runs the renewals of l while the lane is flushed: it returns
// the flush's context, cancelled (cause errLeaseLost) when the lease is
// lost, and the release of the lease, to call when the flush is done.
func (b *Backend) holdLease(ctx context.Context, q FlushQueue, l *lease) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.WithValue(ctx, leaseKey{}, l))
	kept := make(chan struct{})
	go func() { defer close(kept); b.keepLease(ctx, q, l, func() { cancel(errLeaseLost) }) }()
	return ctx, func() {
		cancel(nil)
		<-kept
		b.releaseLease(ctx, q, l)
	}
}

// renewLeaseScript extends the lease while it still holds the owner's token.
//
// KEYS[1] the lease key
// ARGV[1] the owner's token, ARGV[2] the TTL in ms
// Returns 1 when renewed, 0 when the lease ran out or another holds it.
var renewLeaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`)

// keepLease renews l every third of the TTL until ctx ends, and calls lost
// (once) when a renewal finds the lease gone or cannot be made.
func (b *Backend) keepLease(ctx context.Context, q FlushQueue, l *lease, lost func()) {
	t := time.NewTicker(FlushLeaseTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n, err := renewLeaseScript.Run(ctx, b.Redis, []string{LeaseKey(q)}, l.token, FlushLeaseTTL.Milliseconds()).Int()
			if ctx.Err() != nil {
				return
			}
			if err != nil || n != 1 {
				b.Log.Warn("flush lease lost; stopping this lane's flush", "lane", l.lane, "err", err)
				lost()
				return
			}
		}
	}
}

func (b *Backend) releaseLease(ctx context.Context, q FlushQueue, l *lease) {
	if released, err := rdb.ReleaseOwned(context.WithoutCancel(ctx), b.Redis, LeaseKey(q), l.token); err != nil || !released {
		b.Log.Warn("flush outlived its lane's lease; its successor fenced it off", "lane", l.lane, "err", err)
	}
}

// commitFence is the last statement of a batch's transaction: it finds the
// lane's fencing number still l's, or refuses the batch (errLeaseLost).
// Holding the lane's row from here to the commit, it also makes the lane's
// successor's takeLease wait for this commit, so a batch either commits
// before its successor starts or not at all; other lanes' rows are not held.
func commitFence(ctx context.Context, tx *sql.Tx, l *lease) error {
	res, err := tx.ExecContext(ctx, `UPDATE flush_fences SET fence = fence WHERE name = ? AND fence = ?`, l.lane, l.fence)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n != 1 {
		return errLeaseLost
	}
	return nil
}

// releaseBatchScript deletes the processing list only while it holds the
// batch the caller applied (the same length, first and last record): a
// flusher that comes back late never frees a batch its successor moved in.
//
// KEYS[1] processing list
// ARGV[1] the batch's first record, ARGV[2] its last, ARGV[3] its length
// Returns 1 when deleted, 0 when processing holds something else.
var releaseBatchScript = redis.NewScript(`
if redis.call('LLEN', KEYS[1]) == tonumber(ARGV[3]) and redis.call('LINDEX', KEYS[1], 0) == ARGV[1]
	and redis.call('LINDEX', KEYS[1], -1) == ARGV[2] then
	return redis.call('DEL', KEYS[1])
end
return 0
`)

func (b *Backend) releaseBatch(ctx context.Context, q FlushQueue, recs []string) error {
	return releaseBatchScript.Run(ctx, b.Redis, []string{q.Processing}, recs[0], recs[len(recs)-1], len(recs)).Err()
}
