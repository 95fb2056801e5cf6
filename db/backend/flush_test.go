package backend_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/rdb"
)

// The flush survives a failure between moving a batch and committing it:
// every record reaches the durable store exactly once.
func TestFlushCrashBetweenMoveAndCommit(t *testing.T) {
	ctx := context.Background()
	r, sq := dbtest.Redis(t), dbtest.DB(t)
	s := backend.New(sq, r.Client)
	if _, err := sq.W.Exec(`CREATE TABLE flushed (rec TEXT PRIMARY KEY, n INTEGER NOT NULL DEFAULT 1)`); err != nil {
		t.Fatal(err)
	}
	q := backend.FlushQueue{Pending: "{t:1}:pending", Processing: "{t:1}:processing"}
	const total = 1234
	for i := 0; i < total; i++ {
		r.Client.RPush(ctx, q.Pending, fmt.Sprint(i))
	}
	crash := errors.New("crash")
	calls := 0
	apply := func(tx *sql.Tx, recs []string) error {
		for _, rec := range recs {
			if _, err := tx.Exec(`INSERT INTO flushed (rec) VALUES (?) ON CONFLICT (rec) DO UPDATE SET n = flushed.n + 1`, rec); err != nil {
				return err
			}
		}
		calls++
		if calls == 2 {
			return crash // the second batch is rolled back and stays in processing
		}
		return nil
	}
	n, err := s.Flush(ctx, q, apply)
	if !errors.Is(err, crash) || n != backend.FlushBatchSize {
		t.Fatalf("first flush: n=%d err=%v, want %d and the crash", n, err, backend.FlushBatchSize)
	}
	if l := r.Client.LLen(ctx, q.Processing).Val(); l != backend.FlushBatchSize {
		t.Fatalf("processing holds %d, want the failed batch of %d", l, backend.FlushBatchSize)
	}
	// A record arriving meanwhile waits behind the replayed batch.
	r.Client.RPush(ctx, q.Pending, "late")
	if _, err := s.Flush(ctx, q, apply); err != nil {
		t.Fatal(err)
	}
	var rows, maxN int
	sq.R.QueryRow(`SELECT COUNT(*), MAX(n) FROM flushed`).Scan(&rows, &maxN)
	if rows != total+1 || maxN != 1 {
		t.Fatalf("flushed rows=%d max copies=%d, want %d rows each once", rows, maxN, total+1)
	}
	if r.Client.Exists(ctx, q.Pending, q.Processing).Val() != 0 {
		t.Fatal("queue not empty after flush")
	}
}

// Records pushed while a flush runs are all flushed by the end of the next one.
func TestFlushWhileProducing(t *testing.T) {
	ctx := context.Background()
	r, sq := dbtest.Redis(t), dbtest.DB(t)
	s := backend.New(sq, r.Client)
	sq.W.Exec(`CREATE TABLE flushed (rec TEXT PRIMARY KEY)`)
	q := backend.FlushQueue{Pending: "{t:2}:pending", Processing: "{t:2}:processing"}
	apply := func(tx *sql.Tx, recs []string) error {
		for _, rec := range recs {
			if _, err := tx.Exec(`INSERT INTO flushed (rec) VALUES (?) ON CONFLICT DO NOTHING`, rec); err != nil {
				return err
			}
		}
		return nil
	}
	var wg sync.WaitGroup
	for p := 0; p < 8; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			for i := 0; i < 250; i++ {
				r.Client.RPush(ctx, q.Pending, fmt.Sprintf("%d-%d", p, i))
			}
		}(p)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		if _, err := s.Flush(ctx, q, apply); err != nil {
			t.Fatal(err)
		}
	}
	s.Flush(ctx, q, apply)
	var rows int
	sq.R.QueryRow(`SELECT COUNT(*) FROM flushed`).Scan(&rows)
	if rows != 2000 {
		t.Fatalf("flushed %d records, want 2000", rows)
	}
}

// takeoverHook makes a lane's lease (key) pass to another flusher right
// after the first SET of it, as if that flush had outlived the lease.
type takeoverHook struct {
	key, owner string
	done       bool
}

func (h *takeoverHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *takeoverHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *takeoverHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if args := cmd.Args(); !h.done && cmd.Name() == "set" && len(args) > 1 && args[1] == h.key {
			h.done = true
			if err := next(ctx, redis.NewStatusCmd(ctx, "set", h.key, h.owner)); err != nil {
				return err
			}
		}
		return err
	}
}

// A flush that outlives its lane's lease does not free the lease a second
// flusher has taken since; a flush that keeps its lease releases it.
func TestFlushLeaseReleasesOnlyItsOwn(t *testing.T) {
	ctx := context.Background()
	r, sq := dbtest.Redis(t), dbtest.DB(t)
	s := backend.New(sq, r.Client)
	apply := flushedTable(t, sq.W)
	q := backend.FlushQueue{Pending: "{t:3}:pending", Processing: "{t:3}:processing"}
	r.Client.RPush(ctx, q.Pending, "a")
	if _, err := s.Flush(ctx, q, apply); err != nil {
		t.Fatal(err)
	}
	if n := r.Client.Exists(ctx, backend.LeaseKey(q)).Val(); n != 0 {
		t.Fatal("the lane's lease is still held after a flush that kept it")
	}
	r.Client.AddHook(&takeoverHook{key: backend.LeaseKey(q), owner: "flusher-b"})
	r.Client.RPush(ctx, q.Pending, "b")
	s.Flush(ctx, q, apply) // its lease was lost at once: it may say so
	if got, err := r.Client.Get(ctx, backend.LeaseKey(q)).Result(); got != "flusher-b" {
		t.Fatalf("after the first flusher released: lease holds %q (%v), want the second flusher's %q", got, err, "flusher-b")
	}
}

// flushedTable makes the table a test's apply writes, each record counted
// every time it is applied, and returns that apply.
func flushedTable(t *testing.T, sq interface {
	Exec(string, ...any) (sql.Result, error)
}) func(tx *sql.Tx, recs []string) error {
	t.Helper()
	if _, err := sq.Exec(`CREATE TABLE flushed (rec TEXT PRIMARY KEY, n INTEGER NOT NULL DEFAULT 1)`); err != nil {
		t.Fatal(err)
	}
	return func(tx *sql.Tx, recs []string) error {
		for _, rec := range recs {
			if _, err := tx.Exec(`INSERT INTO flushed (rec) VALUES (?) ON CONFLICT (rec) DO UPDATE SET n = flushed.n + 1`, rec); err != nil {
				return err
			}
		}
		return nil
	}
}

// A flusher that died holding a lane's lease and a batch is replaced once
// its lease runs out (FlushLeaseTTL, not a long lock): until then another
// flush skips the lane and says so; then it takes the batch over and
// applies it once.
func TestFlushLeaseTakeover(t *testing.T) {
	ctx := context.Background()
	r, sq := dbtest.Redis(t), dbtest.DB(t)
	s := backend.New(sq, r.Client)
	apply := flushedTable(t, sq.W)
	q := backend.FlushQueue{Pending: "{t:4}:pending", Processing: "{t:4}:processing"}
	for i := 0; i < 700; i++ {
		r.Client.RPush(ctx, q.Pending, fmt.Sprint(i))
	}
	// The dead flusher: its lease, and the batch it had moved.
	if err := r.Client.Set(ctx, backend.LeaseKey(q), "dead-flusher", backend.FlushLeaseTTL).Err(); err != nil {
		t.Fatal(err)
	}
	if ttl := r.Client.PTTL(ctx, backend.LeaseKey(q)).Val(); ttl > backend.FlushLeaseTTL {
		t.Fatalf("lease TTL %v", ttl)
	}
	if _, err := s.TakeBatch(ctx, q); err != nil {
		t.Fatal(err)
	}
	step := func(ctx context.Context) error { _, err := s.Flush(ctx, q, apply); return err }
	if err := s.FlushAll(ctx, step); err != nil {
		t.Fatal(err)
	}
	if w := s.Flushes.LeaseWaits.Load(); w != 1 {
		t.Fatalf("%d lease waits counted, want 1", w)
	}
	var rows, maxN int
	if sq.R.QueryRow(`SELECT COUNT(*), COALESCE(MAX(n), 0) FROM flushed`).Scan(&rows, &maxN); rows != 0 {
		t.Fatalf("%d records applied while the dead flusher's lease held", rows)
	}
	// The lease runs out by itself (Redis's TTL): wait for that event.
	for r.Client.Exists(ctx, backend.LeaseKey(q)).Val() == 1 {
		time.Sleep(20 * time.Millisecond)
	}
	if err := s.FlushAll(ctx, step); err != nil {
		t.Fatal(err)
	}
	sq.R.QueryRow(`SELECT COUNT(*), MAX(n) FROM flushed`).Scan(&rows, &maxN)
	if rows != 700 || maxN != 1 {
		t.Fatalf("after the takeover: %d records (most copies %d), want 700 once each", rows, maxN)
	}
	if n := s.Flushes.Takeovers.Load(); n != 1 {
		t.Fatalf("%d takeovers counted, want the dead flusher's batch", n)
	}
}

// A flusher that comes back after a newer holder of its lane started (a
// paused process, a long GC) commits nothing: its batch stays in processing,
// and the successor applies it, once. A newer holder of another lane fences
// nothing of this one.
func TestFlushFencedAfterSuccessor(t *testing.T) {
	ctx := context.Background()
	r, sq := dbtest.Redis(t), dbtest.DB(t)
	s := backend.New(sq, r.Client)
	apply := flushedTable(t, sq.W)
	q := backend.FlushQueue{Pending: "{t:5}:pending", Processing: "{t:5}:processing"}
	for i := 0; i < 300; i++ {
		r.Client.RPush(ctx, q.Pending, fmt.Sprint(i))
	}
	// The holder of another lane, which took its number before q's two
	// holders took theirs.
	other := backend.FlushQueue{Pending: "{t:55}:pending", Processing: "{t:55}:processing"}
	otherHolder, err := backend.StaleLease(ctx, s, other)
	if err != nil {
		t.Fatal(err)
	}
	stale, err := backend.StaleLease(ctx, s, q)
	if err != nil {
		t.Fatal(err)
	}
	successor, err := backend.StaleLease(ctx, s, q)
	if err != nil {
		t.Fatal(err)
	}
	r.Client.RPush(ctx, other.Pending, "other")
	if _, err := s.Flush(otherHolder, other, apply); err != nil {
		t.Fatalf("lane %s fenced by the newer holders of lane %s: %v", other.Pending, q.Pending, err)
	}
	if _, err := s.Flush(stale, q, apply); err == nil {
		t.Fatal("a flush under a fencing number older than its successor's committed")
	} else if !backend.Unavailable(err) {
		t.Fatalf("a flush fenced off by its successor failed with %v: a caller that flushed first (a checkout) is to be asked again, 503", err)
	}
	var rows, maxN int
	if sq.R.QueryRow(`SELECT COUNT(*) FROM flushed WHERE rec <> 'other'`).Scan(&rows); rows != 0 {
		t.Fatalf("the fenced flush applied %d records", rows)
	}
	if n := s.Flushes.Fenced.Load(); n != 1 {
		t.Fatalf("%d fenced batches counted, want 1", n)
	}
	if l := r.Client.LLen(ctx, q.Processing).Val(); l != 300 {
		t.Fatalf("processing holds %d after the fenced flush, want its batch of 300", l)
	}
	if _, err := s.Flush(successor, q, apply); err != nil {
		t.Fatal(err)
	}
	sq.R.QueryRow(`SELECT COUNT(*), MAX(n) FROM flushed WHERE rec <> 'other'`).Scan(&rows, &maxN)
	if rows != 300 || maxN != 1 {
		t.Fatalf("the successor applied %d records (most copies %d), want 300 once each", rows, maxN)
	}
}

// Releasing a batch deletes processing only while it holds that batch: a
// flusher that comes back late leaves its successor's batch alone.
func TestFlushReleaseOnlyItsBatch(t *testing.T) {
	ctx := context.Background()
	r, sq := dbtest.Redis(t), dbtest.DB(t)
	s := backend.New(sq, r.Client)
	q := backend.FlushQueue{Pending: "{t:6}:pending", Processing: "{t:6}:processing"}
	r.Client.RPush(ctx, q.Processing, "c", "d", "e")
	for _, late := range [][]string{{"a", "b"}, {"c", "d"}, {"a", "d", "e"}, {"c", "x", "f"}} {
		if err := s.ReleaseBatch(ctx, q, late); err != nil {
			t.Fatal(err)
		}
		if got := r.Client.LRange(ctx, q.Processing, 0, -1).Val(); len(got) != 3 {
			t.Fatalf("releasing %v freed the successor's batch: processing %v", late, got)
		}
	}
	if err := s.ReleaseBatch(ctx, q, []string{"c", "d", "e"}); err != nil {
		t.Fatal(err)
	}
	if n := r.Client.Exists(ctx, q.Processing).Val(); n != 0 {
		t.Fatal("releasing its own batch left processing")
	}
}

// A lane's flush that outlasts the lease's TTL renews it and keeps it.
func TestFlushLeaseRenewed(t *testing.T) {
	ctx := context.Background()
	r, sq := dbtest.Redis(t), dbtest.DB(t)
	s := backend.New(sq, r.Client)
	q := backend.FlushQueue{Pending: "{t:8}:pending", Processing: "{t:8}:processing"}
	r.Client.RPush(ctx, q.Pending, "a")
	key := backend.LeaseKey(q)
	var token string
	_, err := s.Flush(ctx, q, func(tx *sql.Tx, recs []string) error {
		token = r.Client.Get(ctx, key).Val()
		// Wait for a renewal (the TTL going up), twice: no wall-clock window.
		for renewals, last := 0, r.Client.PTTL(ctx, key).Val(); renewals < 2; {
			if _, err := tx.Exec(`SELECT 1`); err != nil { // not idle in the transaction
				return err
			}
			ttl := r.Client.PTTL(ctx, key).Val()
			if ttl > last {
				renewals++
			}
			last = ttl
			time.Sleep(10 * time.Millisecond)
		}
		if got := r.Client.Get(ctx, key).Val(); got != token {
			return fmt.Errorf("lease holds %q after renewals, want %q", got, token)
		}
		return nil
	})
	if err != nil || token == "" {
		t.Fatalf("flush: %v (token %q)", err, token)
	}
}

// The flush takes into the durable store only records a replica holds: while
// the master's replica lags, a batch is not applied (a failover could take
// its records back, and the store would keep orders Redis no longer has);
// once the replica catches up, the batch is applied, once.
func TestFlushWaitsForReplica(t *testing.T) {
	ctx := context.Background()
	master := dbtest.StartServer(t)
	replica := master.StartReplica()
	sq := dbtest.DB(t)
	s := backend.New(sq, master.Client)
	s.Pipe = rdb.NewPipeliner(master.Client, 1)
	s.Pipe.SetWait(rdb.AutoReplicas, 500*time.Millisecond)
	s.Pipe.Loops().Start()
	defer s.Pipe.Close()
	apply := flushedTable(t, sq.W)
	q := backend.FlushQueue{Pending: "{t:7}:pending", Processing: "{t:7}:processing"}
	replica.Signal(syscall.SIGSTOP)
	for i := 0; i < 10; i++ {
		master.Client.RPush(ctx, q.Pending, fmt.Sprint(i))
	}
	if _, err := s.Flush(ctx, q, apply); !errors.Is(err, rdb.ErrNotReplicated) {
		t.Fatalf("flush while the replica lags: %v, want ErrNotReplicated", err)
	}
	var rows, maxN int
	if sq.R.QueryRow(`SELECT COUNT(*) FROM flushed`).Scan(&rows); rows != 0 {
		t.Fatalf("%d records applied that no replica held", rows)
	}
	replica.Signal(syscall.SIGCONT)
	for {
		_, err := s.Flush(ctx, q, apply)
		if err == nil {
			break
		}
		if !errors.Is(err, rdb.ErrNotReplicated) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	sq.R.QueryRow(`SELECT COUNT(*), MAX(n) FROM flushed`).Scan(&rows, &maxN)
	if rows != 10 || maxN != 1 {
		t.Fatalf("after the replica caught up: %d records (most copies %d), want 10 once each", rows, maxN)
	}
}

// The Flusher runs every registered step (its lanes each under their lease), each
// interval while started, with the work after each interval flush, and once
// more when stopped (a clean shutdown leaves nothing behind); Run runs the
// steps once and not the work after.
func TestFlusherRunsRegisteredSteps(t *testing.T) {
	ctx := context.Background()
	r, sq := dbtest.Redis(t), dbtest.DB(t)
	b := backend.New(sq, r.Client)
	f := backend.NewFlusher(b, time.Hour) // no tick during the test: only Run and Stop flush
	var steps, leased, after atomic.Int64
	q := backend.FlushQueue{Pending: "{t:9}:pending", Processing: "{t:9}:processing"}
	f.Register(func(ctx context.Context) error {
		steps.Add(1)
		_, err := b.Flush(ctx, q, func(tx *sql.Tx, recs []string) error {
			if r.Client.Exists(ctx, backend.LeaseKey(q)).Val() == 1 {
				leased.Add(int64(len(recs)))
			}
			return nil
		})
		return err
	})
	f.Register(func(ctx context.Context) error { steps.Add(1); return nil })
	f.AfterEach(func(ctx context.Context) error { after.Add(1); return nil })

	r.Client.RPush(ctx, q.Pending, "1")
	if err := f.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if steps.Load() != 2 || leased.Load() != 1 || after.Load() != 0 {
		t.Fatalf("Run: %d steps run (want 2), %d under the lease (want 1), %d after (want 0)", steps.Load(), leased.Load(), after.Load())
	}
	f.Start()
	r.Client.RPush(ctx, q.Pending, "2")
	f.Stop()
	if steps.Load() != 4 || leased.Load() != 2 {
		t.Fatalf("Stop: %d steps run in all (want 4: a last flush), %d under the lease (want 2)", steps.Load(), leased.Load())
	}
	f.Stop() // stopping twice does nothing

	ticking := backend.NewFlusher(b, 10*time.Millisecond)
	ticked := make(chan struct{}, 1)
	ticking.AfterEach(func(ctx context.Context) error {
		select {
		case ticked <- struct{}{}:
		default:
		}
		return nil
	})
	ticking.Start()
	defer ticking.Stop()
	select {
	case <-ticked:
	case <-time.After(30 * time.Second):
		t.Fatal("no interval flush within 30s of a 10ms interval")
	}
}

// Drain is the flush a reader of the store right after needs: a lane another
// flusher holds (its batch not yet committed) is waited for, not skipped as
// Run skips it, so when Drain returns the records are in the store.
func TestFlusherDrainWaitsForAHeldLane(t *testing.T) {
	ctx := context.Background()
	r, sq := dbtest.Redis(t), dbtest.DB(t)
	b := backend.New(sq, r.Client)
	apply := flushedTable(t, sq.W)
	q := backend.FlushQueue{Pending: "{t:8}:pending", Processing: "{t:8}:processing"}
	f := backend.NewFlusher(b, time.Hour)
	f.Register(func(ctx context.Context) error { _, err := b.Flush(ctx, q, apply); return err })
	r.Client.RPush(ctx, q.Pending, "a", "b")
	if err := r.Client.Set(ctx, backend.LeaseKey(q), "worker-2", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.Run(ctx); err != nil || b.Flushes.LeaseWaits.Load() != 1 {
		t.Fatalf("Run of a held lane: %v, %d lease waits; want it skipped once", err, b.Flushes.LeaseWaits.Load())
	}
	done := make(chan error, 1)
	go func() { done <- f.Drain(ctx) }()
	for b.Flushes.LeaseWaits.Load() < 2 { // Drain found the lane held
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("Drain returned (%v) while worker 2 held the lane for a minute", err)
	default:
	}
	r.Client.Del(ctx, backend.LeaseKey(q)) // worker 2 lets go
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var rows int
	if sq.R.QueryRow(`SELECT COUNT(*) FROM flushed`).Scan(&rows); rows != 2 {
		t.Fatalf("%d records in the store when Drain returned, want 2", rows)
	}
}
