package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/rdb"
	"github.com/seckill/seckill/db/sqldb"
)

// A flusher that dies (SIGKILL) or stops (SIGSTOP for 5 s) with a batch in
// flight holds the durable record back only until its lane's lease runs out
// (backend.FlushLeaseTTL, not a long lock): another process takes the batch
// over, every acknowledged order reaches PostgreSQL as its shopper's, and
// nothing is applied twice. The stopped one, resumed, commits nothing stale.
//
// A batch is caught in flight by locking the orders table from the test:
// the flusher's apply waits on it with its batch moved to processing, and
// pg_stat_activity names the process (each host connects under its name).
func TestFlushTakeover(t *testing.T) {
	ctx := context.Background()
	h := sharedHosts(t, "flush takeover test")
	web := h.start("web-1", ModeWeb)
	h.start("worker-1", ModeWorker)
	store, err := sqldb.Open(ctx, h.db, "")
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	r, err := rdb.Open(ctx, h.redis)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	merchant, _ := web.newMerchant()
	sl := web.createSlot(merchant, -time.Minute, time.Hour)
	g := web.createGoods(merchant, sl.ID, 1000, 100)
	var shoppers []string
	for range 10 {
		tok, _ := web.newUser()
		shoppers = append(shoppers, tok)
	}
	acked := map[int64]int64{} // acknowledged order ID → its shopper's user ID
	var mu sync.Mutex
	round := 0
	// sell makes n keyed grabs from every shopper at once, each retried
	// with its key until it is answered, and records the orders acknowledged.
	sell := func(n int) {
		t.Helper()
		round++
		var wg sync.WaitGroup
		for i, tok := range shoppers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range n {
					key := fmt.Sprintf("flush-takeover-%d-%d-%d", round, i, j)
					for {
						ans := web.keyed("POST", fmt.Sprintf("/api/goods/%d/grab", g.ID), tok, key)
						if ans[:3] == "503" {
							continue
						}
						if ans[:3] != "201" {
							t.Errorf("grab: %s", ans)
							return
						}
						id, uid := orderOf(ans)
						mu.Lock()
						acked[id] = uid
						mu.Unlock()
						break
					}
				}
			}()
		}
		wg.Wait()
	}
	// durable says whether PostgreSQL holds every acknowledged order as its shopper's live order.
	durable := func() bool {
		have := pairs(t, store, `SELECT id, user_id FROM orders WHERE goods_id = ? AND status = 'unpaid'`, g.ID)
		mu.Lock()
		defer mu.Unlock()
		for id, uid := range acked {
			if have[id] != uid {
				return false
			}
		}
		return len(have) == len(acked)
	}
	// inFlight locks the orders table, sells a round so that a batch waits
	// for the flush, and returns the host whose flush holds it in flight
	// and the release of the lock.
	inFlight := func() (string, func()) {
		t.Helper()
		tx, err := store.W.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `LOCK TABLE orders IN SHARE MODE`); err != nil {
			t.Fatal(err)
		}
		sell(3)
		var holder string
		eventually(t, time.Minute, "a flush to wait on the orders table with its batch", func() bool {
			err := store.R.QueryRowContext(ctx, `SELECT application_name FROM pg_stat_activity
				WHERE wait_event_type = 'Lock' AND query ~ '^(INSERT INTO|UPDATE) orders ' LIMIT 1`).Scan(&holder)
			return err == nil
		})
		return holder, func() { tx.Rollback() }
	}
	// leaseTTL is the longest a lane lease of the goods lasts unless renewed.
	leaseTTL := func() time.Duration {
		var ttl time.Duration
		keys, err := rdb.Keys(ctx, r.Client, fmt.Sprintf("{goods:%d*}:*%s", g.ID, backend.LeaseSuffix))
		for _, k := range keys {
			ttl = max(ttl, r.Client.PTTL(ctx, k).Val())
		}
		if err != nil {
			t.Fatal(err)
		}
		return ttl
	}

	sell(2)
	eventually(t, time.Minute, "the first orders in PostgreSQL", durable)

	// SIGKILL: a second process is up and waiting for the lease when the
	// flusher dies with its batch in flight.
	holder, release := inFlight()
	if holder != "worker-1" {
		t.Fatalf("the flush in flight is %q's, want worker-1's (the only flusher)", holder)
	}
	serve2 := h.start("serve-2", ModeServe)
	eventually(t, time.Minute, "serve-2 to find the lease held", func() bool { return serve2.metric("seckill_flush_lease_waits_total") >= 1 })
	if ttl := leaseTTL(); ttl <= 0 || ttl > backend.FlushLeaseTTL {
		t.Fatalf("the flusher holds the lease for %v more, want at most the lease's %v", ttl, backend.FlushLeaseTTL)
	}
	h.kill("worker-1")
	killed := time.Now()
	release()
	eventually(t, time.Minute, "every acknowledged order in PostgreSQL after the SIGKILL", durable)
	t.Logf("SIGKILL of the flusher with a batch in flight: durable record caught up %.2f s after the kill (lease %v)", time.Since(killed).Seconds(), backend.FlushLeaseTTL)
	if n := serve2.metric("seckill_flush_takeovers_total"); n < 1 {
		t.Fatalf("serve-2 took over %v batches, want the dead flusher's", n)
	}

	// SIGSTOP: the flusher stops mid-batch for 5 s; the other one takes
	// the batch over, and the stopped one, resumed, commits nothing stale.
	serve3 := h.start("serve-3", ModeServe)
	holder, release = inFlight()
	other := map[string]*testApp{"serve-2": serve3, "serve-3": serve2}[holder]
	if other == nil {
		t.Fatalf("the flush in flight is %q's, want serve-2's or serve-3's", holder)
	}
	takeovers := other.metric("seckill_flush_takeovers_total")
	h.signal(holder, syscall.SIGSTOP)
	stopped := time.Now()
	release()
	eventually(t, time.Minute, "every acknowledged order in PostgreSQL while the flusher is stopped", durable)
	t.Logf("SIGSTOP of the flusher with a batch in flight: durable record caught up %.2f s after the stop", time.Since(stopped).Seconds())
	if n := other.metric("seckill_flush_takeovers_total"); n <= takeovers {
		t.Fatalf("the other process took over %v batches, want the stopped flusher's", n-takeovers)
	}
	time.Sleep(5*time.Second - time.Since(stopped))
	h.signal(holder, syscall.SIGCONT)
	sell(2)
	eventually(t, time.Minute, "every acknowledged order in PostgreSQL after the resume", durable)
	var st statsJSON
	eventually(t, time.Minute, "Redis and PostgreSQL to agree", func() bool {
		st = web.stats(merchant, g.ID)
		return st.Unpaid == int64(len(acked)) && st.DB.Unpaid == st.Unpaid && len(st.Drift) == 0
	})
	var conflicts int64
	if err := store.R.QueryRowContext(ctx, `SELECT COUNT(*) FROM order_conflicts WHERE goods_id = ?`, g.ID).Scan(&conflicts); err != nil || conflicts != 0 {
		t.Fatalf("%d orders refused by the database (%v): applied twice or out of order", conflicts, err)
	}
}

// pairs reads a query's two integer columns as a map of the first to the second.
func pairs(t *testing.T, store *sqldb.DB, query string, args ...any) map[int64]int64 {
	t.Helper()
	rows, err := store.R.QueryContext(context.Background(), query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64]int64{}
	for rows.Next() {
		var k, v int64
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		out[k] += v
	}
	return out
}

var orderIDPattern = regexp.MustCompile(`"order":\{"id":(\d+).*?"user_id":(\d+)`)

// orderOf reads the order ID and user ID of a grab's "201 {order:…}" answer.
func orderOf(ans string) (id, uid int64) {
	m := orderIDPattern.FindStringSubmatch(ans)
	if m == nil {
		return 0, 0
	}
	id, _ = strconv.ParseInt(m[1], 10, 64)
	uid, _ = strconv.ParseInt(m[2], 10, 64)
	return id, uid
}

// metric reads one series of the process's /metrics (0 when absent).
func (a *testApp) metric(name string) float64 {
	a.T.Helper()
	req, _ := http.NewRequest("GET", a.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+hostsMetricsToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.T.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindSubmatch(b)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}
