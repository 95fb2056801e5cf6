package main

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/seckill/seckill/cmd/seckill/app"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/sqldb"
)

// What SIGTERM does: the context main hands to run ends, and the process
// stops accepting, closes its sockets and its database, and returns cleanly.
func TestRunShutsDownCleanly(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dbPath := filepath.Join(t.TempDir(), "run.db")
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// A flag, so that the run's DATABASE_URL (the server's, not a database
	// of this test's own) never reaches the process.
	databaseURL := dbtest.DatabaseURL(t)
	go func() {
		done <- run(ctx, []string{"serve", "-addr", addr, "-db-path", dbPath, "-database-url", databaseURL, "-redis-url", dbtest.RedisURL(t),
			"-admin-password", "admin-password", "-session-secret", "test-session-secret-0123456789"})
	}()
	base := "http://" + addr
	eventually(t, 30*time.Second, "the server to answer", func() bool {
		res, err := http.Get(base + "/healthz")
		if err == nil {
			res.Body.Close()
		}
		return err == nil && res.StatusCode == 200
	})
	ws := dialWS(t, base, "")
	subscribe(t, ws, "goods:1")

	stop() // as SIGINT or SIGTERM would
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run returned %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after the signal")
	}
	ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := ws.ReadMessage(); err == nil {
		t.Fatal("the WebSocket is still open after shutdown")
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatal("the server still accepts connections after shutdown")
	}
	// SQLite folds and removes the write-ahead log when its last connection closes cleanly.
	if _, err := os.Stat(dbPath + "-wal"); databaseURL == "" && !os.IsNotExist(err) {
		t.Fatalf("the database was not closed: %s-wal remains (%v)", dbPath, err)
	}
}

// A process closed the moment it opened still stops serving: its listener
// may not be registered with the server yet when Shutdown runs.
func TestCloseRightAfterOpen(t *testing.T) {
	a := startApp(t)
	cfg := a.Config
	cfg.RedisURL = a.Redis.URL
	for i := 0; i < 10; i++ {
		m := NewMain(cfg, ModeWeb)
		m.Log = app.DiscardLogger()
		if err := m.Open(t.Context()); err != nil {
			m.Close()
			t.Fatal(err)
		}
		closed := make(chan struct{})
		go func() { m.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(time.Minute): // a hang, not a slow machine
			t.Fatalf("open %d: Close did not return", i)
		}
	}
}

// A clean shutdown leaves nothing behind in Redis: Close flushes every
// area's pending records once more, long before the next interval flush.
func TestShutdownFlushesWhatIsPending(t *testing.T) {
	a := startApp(t, func(c *Config) { c.FlushInterval = time.Hour })
	_, g := a.liveGoods(10, 1)
	shopper, _ := a.newUser()
	a.grab(shopper, g.ID)
	count := func(store *sqldb.DB) (n int) {
		if err := store.R.QueryRow(`SELECT COUNT(*) FROM orders WHERE goods_id = ?`, g.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(a.SQL); n != 0 {
		t.Fatalf("%d orders in the durable store before any flush; the test needs them pending in Redis", n)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	store, err := sqldb.Open(context.Background(), a.Config.DatabaseURL, a.Config.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if n := count(store); n != 1 {
		t.Fatalf("after a clean shutdown the durable store holds %d orders of the goods, want the 1 grabbed", n)
	}
}
