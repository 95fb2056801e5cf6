package backend_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/dbtest"
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

// takeoverHook makes the flush lock expire and pass to another flusher right
// after the first SET of it, as if that flush had outlived the lock's TTL.
type takeoverHook struct {
	owner string
	done  bool
}

func (h *takeoverHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *takeoverHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *takeoverHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if args := cmd.Args(); !h.done && cmd.Name() == "set" && len(args) > 1 && args[1] == backend.FlushLockKey {
			h.done = true
			if err := next(ctx, redis.NewStatusCmd(ctx, "set", backend.FlushLockKey, h.owner)); err != nil {
				return err
			}
		}
		return err
	}
}

// A flush that outlives its lock does not free the lock a second flusher has
// taken since; a flush that keeps its lock releases it.
func TestFlushLockReleasesOnlyItsOwn(t *testing.T) {
	ctx := context.Background()
	r, sq := dbtest.Redis(t), dbtest.DB(t)
	s := backend.New(sq, r.Client)
	if err := s.FlushAll(ctx); err != nil {
		t.Fatal(err)
	}
	if n := r.Client.Exists(ctx, backend.FlushLockKey).Val(); n != 0 {
		t.Fatal("the flush lock is still held after a flush that kept it")
	}
	r.Client.AddHook(&takeoverHook{owner: "flusher-b"})
	if err := s.FlushAll(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Client.Get(ctx, backend.FlushLockKey).Result(); got != "flusher-b" {
		t.Fatalf("after the first flusher released: lock holds %q (%v), want the second flusher's %q", got, err, "flusher-b")
	}
}
