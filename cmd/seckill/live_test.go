package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/seckill/seckill/cmd/seckill/bench/scenarios"
	"github.com/seckill/seckill/db/dbtest"
)

// dialWS opens a WebSocket to the app, with a token when given.
func dialWS(t testing.TB, base, token string) *websocket.Conn {
	t.Helper()
	u := "ws" + strings.TrimPrefix(base, "http") + "/ws"
	if token != "" {
		u += "?token=" + token
	}
	c, res, err := websocket.DefaultDialer.Dial(u, nil)
	if err != nil {
		st := 0
		if res != nil {
			st = res.StatusCode
		}
		t.Fatalf("dial %s: %v (status %d)", u, err, st)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// subscribe asks for a topic and waits for the server's confirmation.
func subscribe(t testing.TB, c *websocket.Conn, topic string) {
	t.Helper()
	if err := c.WriteJSON(map[string]string{"op": "subscribe", "topic": topic}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, c, func(ev map[string]any) bool { return ev["type"] == "subscribed" && ev["topic"] == topic })
}

// waitEvent reads events until match accepts one, failing after a generous deadline.
func waitEvent(t testing.TB, c *websocket.Conn, match func(map[string]any) bool) map[string]any {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(15 * time.Second))
	defer c.SetReadDeadline(time.Time{})
	for {
		var ev map[string]any
		if err := c.ReadJSON(&ev); err != nil {
			t.Fatalf("waiting for an event: %v", err)
		}
		if match(ev) {
			return ev
		}
	}
}

// An event published through one process reaches a client of another process
// that shares the Redis; a user's own events arrive without subscribing.
func TestLiveFanOutAcrossProcesses(t *testing.T) {
	a := startApp(t)
	cfg := a.Config
	cfg.DBPath = filepath.Join(t.TempDir(), "b.db")
	cfg.RedisURL = a.Redis.URL // B shares A's Redis (embedded or real)
	b := startMain(t, cfg, ModeWeb)

	anon := dialWS(t, b.URL, "")
	subscribe(t, anon, "goods:42")
	tok, uid := a.newUser()
	mine := dialWS(t, b.URL, tok)
	// The answer to a subscription shows the hub has taken the socket in, and
	// with it the user's own topic: an event published before that is not its to deliver.
	subscribe(t, mine, "goods:1")

	ctx := context.Background()
	if err := a.Backend.Events.Publish(ctx, "goods:42", map[string]any{"type": "stock", "goods_id": 42, "remaining": 17}); err != nil {
		t.Fatal(err)
	}
	ev := waitEvent(t, anon, func(ev map[string]any) bool { return ev["type"] == "stock" })
	if ev["goods_id"] != float64(42) || ev["remaining"] != float64(17) {
		t.Fatalf("stock event %v", ev)
	}
	a.Backend.Events.Publish(ctx, fmt.Sprintf("user:%d", uid), map[string]any{"type": "notification", "notification": map[string]any{"id": 1}})
	if ev := waitEvent(t, mine, func(ev map[string]any) bool { return ev["type"] == "notification" }); ev["notification"] == nil {
		t.Fatalf("own event %v", ev)
	}

	// Other users' topics and unknown topics are refused.
	anon.WriteJSON(map[string]string{"op": "subscribe", "topic": fmt.Sprintf("user:%d", uid)})
	if ev := waitEvent(t, anon, func(ev map[string]any) bool { return ev["type"] != "stock" }); ev["type"] != "error" {
		t.Fatalf("subscribing to another user's topic: %v", ev)
	}

	// A bad token is refused before the upgrade; a foreign origin too.
	if _, res, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(b.URL, "http")+"/ws?token=bogus", nil); err == nil || res.StatusCode != 401 {
		t.Fatalf("bad token: err=%v", err)
	}
	h := http.Header{"Origin": {"http://evil.example"}}
	if _, res, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(b.URL, "http")+"/ws", h); err == nil || res.StatusCode != 403 {
		t.Fatalf("foreign origin: err=%v", err)
	}
}

// A client that never reads is dropped; another client on the same topic
// keeps receiving every event, and the hub never waits for the slow one.
func TestSlowClientIsDropped(t *testing.T) {
	a := startApp(t)
	a.Web.Hub.SendBuffer = 64
	slow := dialWS(t, a.URL, "")
	subscribe(t, slow, "goods:7") // and never reads again
	fast := dialWS(t, a.URL, "")
	subscribe(t, fast, "goods:7")

	var got atomic.Int64
	go func() {
		for {
			var ev struct {
				Seq int64 `json:"seq"`
			}
			if err := fast.ReadJSON(&ev); err != nil {
				return
			}
			got.Store(ev.Seq)
		}
	}()
	pad := strings.Repeat("x", 16<<10)
	ctx := context.Background()
	const chunk = 32
	seq := int64(0)
	// Publish in chunks the fast client keeps up with, until the slow one's
	// socket buffers and send queue are full and the hub drops it.
	for round := 0; a.Web.Hub.Clients() > 1; round++ {
		if round > 2000 {
			t.Fatal("the slow client was never dropped")
		}
		for i := 0; i < chunk; i++ {
			seq++
			a.Backend.Events.Publish(ctx, "goods:7", map[string]any{"type": "stock", "seq": seq, "pad": pad})
		}
		want := seq
		eventually(t, 15*time.Second, "the fast client to keep receiving", func() bool { return got.Load() == want })
	}
	seq++
	a.Backend.Events.Publish(ctx, "goods:7", map[string]any{"type": "stock", "seq": seq})
	eventually(t, 15*time.Second, "the fast client to get the last event", func() bool { return got.Load() == seq })
	if n := a.Web.Hub.Clients(); n != 1 {
		t.Fatalf("%d clients connected, want only the fast one", n)
	}
	t.Logf("slow client dropped after %d events of 16 KiB", seq)
}

// The hub pings every socket; one that never answers is dropped after two
// intervals, while a client that answers (gorilla pongs as it reads) stays.
func TestSilentSocketIsDroppedByKeepalive(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Addr, cfg.DBPath, cfg.RedisURL = "127.0.0.1:0", filepath.Join(t.TempDir(), "k.db"), dbtest.RedisURL(t)
	cfg.DatabaseURL = dbtest.DatabaseURL(t)
	cfg.AdminPassword, cfg.SessionSecret = testAdminPassword, "test-session-secret-0123456789"
	a := startMain(t, cfg, ModeServe, func(m *Main) { m.PingInterval = 150 * time.Millisecond })

	alive := dialWS(t, a.URL, "")
	subscribe(t, alive, "goods:5")
	var got atomic.Int64
	go func() {
		for {
			var ev struct {
				Remaining int64 `json:"remaining"`
			}
			if alive.ReadJSON(&ev) != nil {
				return
			}
			got.Store(ev.Remaining)
		}
	}()
	u, _ := url.Parse(scenarios.WSURL(a.URL))
	silent, err := scenarios.RawWebSocket(u, "goods:5", "") // subscribes, then never reads or pongs
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	eventually(t, 5*time.Second, "both sockets connected", func() bool { return a.Web.Hub.Clients() == 2 })
	eventually(t, 10*time.Second, "the silent socket to be dropped", func() bool { return a.Web.Hub.Clients() == 1 })
	a.Backend.Events.Publish(context.Background(), "goods:5", map[string]any{"type": "stock", "goods_id": 5, "remaining": 42})
	eventually(t, 5*time.Second, "the answering client to keep receiving", func() bool { return got.Load() == 42 })
}
