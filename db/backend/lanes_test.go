package backend_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/rdb"
)

// stallHook stops its client's flush in lane q right after the batch moved
// to processing (the lane's lease held, its batch not yet committed): it
// closes stalled there and waits for resume.
type stallHook struct {
	q               backend.FlushQueue
	once            sync.Once
	stalled, resume chan struct{}
}

func (h *stallHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *stallHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *stallHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		args := cmd.Args()
		if err == nil && (cmd.Name() == "evalsha" || cmd.Name() == "eval") && len(args) > 4 &&
			args[3] == h.q.Pending && args[4] == h.q.Processing {
			h.once.Do(func() { close(h.stalled); <-h.resume })
		}
		return err
	}
}

// secondWorker is another worker process's backend on the same Redis and
// durable store: its own Redis client, its own flush stats.
func secondWorker(t testing.TB, r *rdb.Redis, b *backend.Backend) (*backend.Backend, redis.UniversalClient) {
	t.Helper()
	r2, err := rdb.Open(context.Background(), r.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r2.Close() })
	return backend.New(b.SQL, r2.Client), r2.Client
}

// Two workers flush two items at once: while worker 1 is stopped inside
// item A's flush (its batch moved, not committed), worker 2 skips A (its
// lane is held) and flushes item B; once worker 1 goes on, it commits A.
// Every record is in the store once, each lane flushed by one worker.
func TestFlushLanesSideBySide(t *testing.T) {
	ctx := context.Background()
	r, sq := dbtest.Redis(t), dbtest.DB(t)
	w2 := backend.New(sq, r.Client)
	apply := flushedTable(t, sq.W)
	qa := backend.FlushQueue{Pending: "{goods:1}:pending", Processing: "{goods:1}:processing"}
	qb := backend.FlushQueue{Pending: "{goods:2}:pending", Processing: "{goods:2}:processing"}
	for i := 0; i < 300; i++ {
		r.Client.RPush(ctx, qa.Pending, fmt.Sprint("a", i))
		r.Client.RPush(ctx, qb.Pending, fmt.Sprint("b", i))
	}
	w1, c1 := secondWorker(t, r, w2)
	hook := &stallHook{q: qa, stalled: make(chan struct{}), resume: make(chan struct{})}
	c1.AddHook(hook)
	// Each worker's flush walks the items in the same order, A then B.
	step := func(w *backend.Backend) func(context.Context) error {
		return func(ctx context.Context) error {
			for _, q := range []backend.FlushQueue{qa, qb} {
				if _, err := w.Flush(ctx, q, apply); err != nil {
					return err
				}
			}
			return nil
		}
	}
	done1 := make(chan error, 1)
	go func() { done1 <- w1.FlushAll(ctx, step(w1)) }()
	<-hook.stalled

	count := func(prefix string) (rows, maxN int) {
		sq.R.QueryRow(`SELECT COUNT(*), COALESCE(MAX(n), 0) FROM flushed WHERE rec LIKE ?`, prefix+"%").Scan(&rows, &maxN)
		return
	}
	if err := w2.FlushAll(ctx, step(w2)); err != nil {
		t.Fatal(err)
	}
	if rows, _ := count("b"); rows != 300 {
		t.Fatalf("worker 2 flushed %d records of item B while worker 1 was inside item A's flush, want 300", rows)
	}
	if rows, _ := count("a"); rows != 0 {
		t.Fatalf("%d records of item A committed while worker 1 held its lane", rows)
	}
	if w := w2.Flushes.LeaseWaits.Load(); w != 1 {
		t.Fatalf("worker 2 counted %d lease waits, want 1 (item A's lane)", w)
	}
	select {
	case err := <-done1:
		t.Fatalf("worker 1's flush ended (%v) before it was resumed", err)
	default:
	}
	close(hook.resume)
	if err := <-done1; err != nil {
		t.Fatal(err)
	}
	for _, item := range []string{"a", "b"} {
		if rows, maxN := count(item); rows != 300 || maxN != 1 {
			t.Fatalf("item %s: %d records in the store (most copies %d), want 300 once each", item, rows, maxN)
		}
	}
	if a, b := w1.Flushes.Records.Load(), w2.Flushes.Records.Load(); a != 300 || b != 300 {
		t.Fatalf("worker 1 committed %d records, worker 2 %d; want item A's 300 and item B's 300", a, b)
	}
	if n := r.Client.Exists(ctx, backend.LeaseKey(qa)).Val() + r.Client.Exists(ctx, backend.LeaseKey(qb)).Val(); n != 0 {
		t.Fatalf("%d lane leases left behind", n)
	}
}

// BenchmarkFlushLanes reports the rows a second flushed through the lanes
// by one and by two workers (two backends on the same Redis and store, as
// two worker processes are), each walking every lane and taking those no
// other holds: go test ./db/backend -run '^$' -bench FlushLanes.
func BenchmarkFlushLanes(b *testing.B) {
	const lanes, perLane = 16, 2000
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			ctx := context.Background()
			r, sq := dbtest.Redis(b), dbtest.DB(b)
			first := backend.New(sq, r.Client)
			ws := []*backend.Backend{first}
			for len(ws) < workers {
				w, _ := secondWorker(b, r, first)
				ws = append(ws, w)
			}
			if _, err := sq.W.Exec(`CREATE TABLE flushed (rec TEXT PRIMARY KEY)`); err != nil {
				b.Fatal(err)
			}
			apply := func(tx *sql.Tx, recs []string) error {
				rows := make([][]any, len(recs))
				for i, rec := range recs {
					rows[i] = []any{rec}
				}
				_, err := sq.InsertRows(ctx, tx, "flushed", []string{"rec"}, rows)
				return err
			}
			qs := make([]backend.FlushQueue, lanes)
			for i := range qs {
				qs[i] = backend.FlushQueue{Pending: fmt.Sprintf("{bench:%d}:pending", i), Processing: fmt.Sprintf("{bench:%d}:processing", i)}
			}
			var flushed time.Duration
			for n := 0; n < b.N; n++ {
				b.StopTimer()
				for _, q := range qs {
					recs := make([]any, perLane)
					for i := range recs {
						recs[i] = fmt.Sprintf("%d:%s:%d", n, q.Pending, i)
					}
					r.Client.RPush(ctx, q.Pending, recs...)
				}
				b.StartTimer()
				start := time.Now()
				var wg sync.WaitGroup
				for _, w := range ws {
					wg.Add(1)
					go func() {
						defer wg.Done()
						// Rounds until every lane is empty: a lane held by the other worker is skipped.
						for left := true; left; {
							left = false
							for _, q := range qs {
								if _, err := w.Flush(ctx, q, apply); err != nil {
									b.Error(err)
									return
								}
								if r.Client.Exists(ctx, q.Pending, q.Processing).Val() > 0 {
									left = true
								}
							}
						}
					}()
				}
				wg.Wait()
				flushed += time.Since(start)
			}
			b.ReportMetric(float64(lanes*perLane*b.N)/flushed.Seconds(), "rows/s")
		})
	}
}

// A flush that needs the records in the store now (WaitLanes: a checkout)
// waits for a lane another flusher holds, flushes it once that one lets
// go, and past its wait says the lane is busy (ErrLaneBusy).
func TestFlushWaitLanes(t *testing.T) {
	ctx := context.Background()
	r, sq := dbtest.Redis(t), dbtest.DB(t)
	s := backend.New(sq, r.Client)
	apply := flushedTable(t, sq.W)
	q := backend.FlushQueue{Pending: "{goods:3}:pending", Processing: "{goods:3}:processing"}
	r.Client.RPush(ctx, q.Pending, "a", "b")
	if err := r.Client.Set(ctx, backend.LeaseKey(q), "worker-2", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Flush(backend.WaitLanes(ctx, 50*time.Millisecond), q, apply); !errors.Is(err, backend.ErrLaneBusy) {
		t.Fatalf("flush of a lane held for a minute, waiting 50 ms: %v, want ErrLaneBusy", err)
	}
	done := make(chan error, 1)
	go func() {
		n, err := s.Flush(backend.WaitLanes(ctx, time.Minute), q, apply)
		if err == nil && n != 2 {
			err = fmt.Errorf("flushed %d records, want 2", n)
		}
		done <- err
	}()
	for s.Flushes.LeaseWaits.Load() < 2 { // the waiting flush found the lane held
		time.Sleep(5 * time.Millisecond)
	}
	var rows int
	if sq.R.QueryRow(`SELECT COUNT(*) FROM flushed`).Scan(&rows); rows != 0 {
		t.Fatalf("%d records flushed while worker 2 held the lane", rows)
	}
	r.Client.Del(ctx, backend.LeaseKey(q)) // worker 2 lets go without draining it
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if sq.R.QueryRow(`SELECT COUNT(*) FROM flushed`).Scan(&rows); rows != 2 {
		t.Fatalf("%d records in the store after the wait, want 2", rows)
	}
}
