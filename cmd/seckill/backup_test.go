package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/seckill/seckill/db/dbtest"
)

// The restore drill (docs/OPERATIONS.md, "Backups and restore"): `seckill
// backup` runs while shoppers grab; the backup is restored into a fresh
// store; a server started on it with the same Redis holds every order
// flushed before the backup, and after `seckill resend-orders` every order
// Redis holds, with the stock check (Redis against the store) showing no
// drift. On SQLite the backup is VACUUM INTO; with DATABASE_URL set
// (PostgreSQL) it is pg_dump, restored with pg_restore.
// drillGrabsPerShopper bounds each shopper's grabs in the drill, under the
// goods' limit a shopper (1000) and the stock shared by eight (8000).
const drillGrabsPerShopper = 800

func TestBackupRestoreDrill(t *testing.T) {
	// No deadline of the wall clock over the whole drill: on a busy machine
	// its steps may take minutes, each waits on what it needs (the test's
	// own -timeout ends a hung one).
	ctx := t.Context()
	redisURL := drillRedis(t)
	a := startApp(t, func(c *Config) { c.RedisURL = redisURL })
	mt, g := a.liveGoods(8000, 1000)
	shoppers := make([]string, 8)
	for i := range shoppers {
		shoppers[i], _ = a.newUser()
	}
	storeOrders := func(app *testApp) map[int64]int64 {
		return pairs(t, app.SQL, `SELECT id, user_id FROM orders WHERE goods_id = ?`, g.ID)
	}

	// Grabs run all through the backup and after it. Each shopper grabs
	// only while the drill has given them grabs to make (budget), never on
	// a pace of the wall clock: however long the backup takes on a busy
	// machine, nobody reaches the limit nor the goods sell out.
	var acked sync.Map // order ID → user ID
	var won atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 30 * time.Second}
	budgets := make([]chan struct{}, len(shoppers))
	give := func(n int) { // n more grabs to each shopper
		for _, b := range budgets {
			for range n {
				select {
				case b <- struct{}{}:
				default: // a full budget is grabs enough
				}
			}
		}
	}
	for i, tok := range shoppers {
		budgets[i] = make(chan struct{}, drillGrabsPerShopper/4)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				case <-budgets[i]:
				}
				ans := grabOnce(client, fmt.Sprintf("%s/api/goods/%d/grab", a.URL, g.ID), tok, fmt.Sprintf("drill-%d-%d", i, n))
				if ans.status == http.StatusCreated {
					acked.Store(ans.order, ans.user)
					won.Add(1)
				} else if ans.status != http.StatusServiceUnavailable {
					t.Errorf("grab: %d %s %s", ans.status, ans.code, ans.body)
					return
				}
				time.Sleep(5 * time.Millisecond) // a pace, so the grabs spread over the drill
			}
		}()
	}
	stopGrabs := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopGrabs()

	// Some orders reach the store; then the backup, mid-sale.
	give(drillGrabsPerShopper / 4)
	eventually(t, time.Minute, "orders flushed to the store", func() bool { return len(storeOrders(a)) >= 40 })
	give(drillGrabsPerShopper / 4) // grabs that go on while the backup runs
	before := storeOrders(a)       // flushed before the backup began: each must be in it
	file, flags := backupStore(t, a)
	// Counted from the backup's end, not its start: a grab acknowledged
	// while a slow backup was starting may be in it, one after it ended cannot.
	wonAfterBackup := won.Load()
	// A backup holds every order and account: only its owner reads it, as the secrets beside the store.
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the backup's mode: %v (%v), want -rw-------", fi.Mode().Perm(), err)
	}
	if err := runBackup(ctx, append([]string{file}, flags...), io.Discard); err == nil {
		t.Fatal("a second backup over the first: want an error, not an overwritten file")
	}
	// The sale goes on after the backup, so the restored store is behind Redis.
	var after atomic.Int64 // grabs given after the backup, per shopper
	eventually(t, time.Minute, "grabs after the backup", func() bool {
		if won.Load() >= wonAfterBackup+40 {
			return true
		}
		if after.Add(5) <= drillGrabsPerShopper/4 {
			give(5)
		}
		return false
	})
	stopGrabs()
	if t.Failed() {
		t.FailNow()
	}
	total := 0
	acked.Range(func(_, _ any) bool { total++; return true })
	t.Logf("%d orders acknowledged, %d flushed before the backup, %d won after it", total, len(before), won.Load()-wonAfterBackup)

	// Every process stops; the store is restored into a fresh place.
	b := restoreStore(t, a, file, redisURL)
	have := storeOrders(b)
	for id, uid := range before {
		if have[id] != uid {
			t.Errorf("order %d of shopper %d, flushed before the backup: the restored store has it as shopper %d's", id, uid, have[id])
		}
	}
	if len(have) >= total {
		t.Fatalf("the restored store holds %d of %d orders: the backup was not taken mid-sale", len(have), total)
	}
	if st := b.stats(mt, g.ID); len(st.Drift) == 0 {
		t.Fatalf("the stock check finds no drift between Redis (%d unpaid) and a store restored behind it (%d)", st.Unpaid, st.DB.Unpaid)
	}

	// Redis gives back what the store lost; the stock check reconciles.
	r, err := resendOrders(ctx, b.Main)
	if err != nil {
		t.Fatalf("resend orders: %v", err)
	}
	if n := r.orders; n < int64(total) {
		t.Fatalf("resent %d orders of the %d Redis holds", n, total)
	}
	have = storeOrders(b)
	acked.Range(func(k, v any) bool {
		if have[k.(int64)] != v.(int64) {
			t.Errorf("acknowledged order %d of shopper %d: in the store as shopper %d's after the resend", k, v, have[k.(int64)])
		}
		return true
	})
	if len(have) != total {
		t.Errorf("%d orders in the store, %d acknowledged", len(have), total)
	}
	st := b.stats(mt, g.ID)
	if len(st.Drift) != 0 || st.DB.Unpaid != int64(total) || st.DB.Stock != st.Remaining {
		t.Fatalf("stock check after the resend: drift %v; Redis %d unpaid, %d left; store %d unpaid, %d left", st.Drift, st.Unpaid, st.Remaining, st.DB.Unpaid, st.DB.Stock)
	}
	// The shop serves on the restored store.
	tok, _ := b.newUser()
	if o := b.grab(tok, g.ID); o.ID == 0 {
		t.Fatal("no grab on the restored store")
	}
}

// drillRedis is the Redis both processes of a restore drill share: the
// test's own, or an embedded one of the test (the one a process embeds ends
// with it, and a restore stops every process). On PostgreSQL the drill
// needs pg_dump and pg_restore, or it is skipped.
func drillRedis(t *testing.T) string {
	t.Helper()
	if os.Getenv("DATABASE_URL") != "" {
		for _, tool := range []string{"pg_dump", "pg_restore"} {
			if _, err := exec.LookPath(tool); err != nil {
				t.Skipf("restore drill on PostgreSQL: %s is not on PATH (apt-get install postgresql-client)", tool)
			}
		}
	}
	if url := dbtest.RedisURL(t); url != "" {
		return url
	}
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return "redis://" + m.Addr()
}

// backupStore runs `seckill backup` on a's store while it serves and
// returns the backup's file and the flags that name the store.
func backupStore(t *testing.T, a *testApp) (file string, flags []string) {
	t.Helper()
	file = filepath.Join(t.TempDir(), "backup", "seckill.bak")
	flags = []string{"-db-path", a.Config.DBPath}
	if a.Config.DatabaseURL != "" {
		flags = []string{"-database-url", a.Config.DatabaseURL}
	}
	var out bytes.Buffer
	if err := runBackup(t.Context(), append([]string{file}, flags...), &out); err != nil {
		t.Fatalf("seckill backup: %v", err)
	}
	t.Logf("seckill backup: %s", strings.TrimSpace(out.String()))
	return file, flags
}

// restoreStore stops a, restores the backup file into a fresh store as
// docs/OPERATIONS.md says (pg_restore on PostgreSQL, a copy of the file on
// SQLite) and starts a server on it with the same Redis.
func restoreStore(t *testing.T, a *testApp, file, redisURL string) *testApp {
	t.Helper()
	a.Main.Close()
	restored := filepath.Join(t.TempDir(), "restored", "seckill.db")
	restoredURL := ""
	if a.Config.DatabaseURL != "" {
		restoredURL = dbtest.EmptyPostgresURL(t)
		cmd := exec.CommandContext(t.Context(), "pg_restore", "--no-owner", "--no-privileges", "--exit-on-error", "--dbname="+restoredURL, file)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("pg_restore: %v\n%s", err, b)
		}
	} else {
		os.MkdirAll(filepath.Dir(restored), 0o755)
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(restored, raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return startApp(t, func(c *Config) { c.RedisURL, c.DBPath, c.DatabaseURL = redisURL, restored, restoredURL })
}
