package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/db/live"
)

// startSecondWeb starts a web process beside a, on a's Redis (embedded or
// real) and its own database: what reaches its sockets comes through Redis.
func startSecondWeb(t *testing.T, a *testApp) *testApp {
	t.Helper()
	cfg := a.Config
	cfg.DBPath = filepath.Join(t.TempDir(), "b.db")
	cfg.RedisURL = a.Redis.URL
	return startMain(t, cfg, ModeWeb)
}

// isOrderEvent matches the order event of one order.
func isOrderEvent(orderID int64) func(map[string]any) bool {
	return func(ev map[string]any) bool {
		od, _ := ev["order"].(map[string]any)
		return ev["type"] == "order" && od != nil && num(od["id"]) == orderID
	}
}

// With two web processes, a shopper's order events go to the process that
// holds the shopper's socket, not to both: each process receives from Redis
// exactly the events of its own shoppers (about half of all of them), and
// every shopper gets each of their order events, wherever the grab was served.
func TestLiveUserEventsGoToTheirProcess(t *testing.T) {
	a := startApp(t)
	b := startSecondWeb(t, a)
	ctx := context.Background()
	_, g := a.liveGoods(100, 1)

	const perProcess = 6
	type shopper struct {
		tok  string
		id   int64
		ws   *wsClient
		home int // 0: a, 1: b
	}
	var shoppers []*shopper
	var truth [2]atomic.Int64 // what Redis carried on each process's shoppers' channels
	for i := 0; i < 2*perProcess; i++ {
		tok, id := a.newUser()
		s := &shopper{tok: tok, id: id, home: i % 2}
		s.ws = []*testApp{a, b}[s.home].dialWS(tok)
		// An observer of the shopper's channel counts what Redis carries on it.
		sub, err := live.Subscribe(ctx, a.Redis.Client, live.TopicUser(id))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sub.Close() })
		go func() {
			for range sub.Channel() {
				truth[s.home].Add(1)
			}
		}()
		shoppers = append(shoppers, s)
	}
	// A marker on every shopper's topic, through to their socket: what was
	// published before it has been counted on both sides.
	marks := 0
	mark := func() {
		t.Helper()
		marks++
		var msgs []live.Message
		for _, s := range shoppers {
			msgs = append(msgs, live.Message{Topic: live.TopicUser(s.id), Event: []byte(fmt.Sprintf(`{"type":"test:mark","mark":%d}`, marks))})
		}
		if err := a.Backend.Events.PublishAll(ctx, msgs); err != nil {
			t.Fatal(err)
		}
		for _, s := range shoppers {
			s.ws.next(t, 15*time.Second, "the marker", func(ev map[string]any) bool { return ev["type"] == "test:mark" && num(ev["mark"]) == int64(marks) })
		}
	}
	hubs := [2]func() int64{a.Web.Hub.UserEventsReceived, b.Web.Hub.UserEventsReceived}
	var hub0, truth0 [2]int64
	mark()
	eventually(t, 15*time.Second, "the counts to settle", func() bool {
		for p := range hubs {
			hub0[p], truth0[p] = hubs[p](), truth[p].Load()
		}
		return hub0[0] == truth0[0] && hub0[1] == truth0[1]
	})

	// Every shopper grabs through web A; the order events come through Redis.
	for _, s := range shoppers {
		o := a.grab(s.tok, g.ID)
		s.ws.next(t, 15*time.Second, fmt.Sprintf("order %d's event", o.ID), isOrderEvent(o.ID))
	}
	mark()
	var got, want [2]int64
	eventually(t, 15*time.Second, "each process to receive exactly its shoppers' events", func() bool {
		for p := range hubs {
			got[p], want[p] = hubs[p]()-hub0[p], truth[p].Load()-truth0[p]
		}
		return got == want
	})
	for p, n := range got {
		if n < perProcess+1 { // each shopper's order event and the marker at least
			t.Fatalf("web %c received %d user events, want at least %d", 'A'+p, n, perProcess+1)
		}
	}
	// /metrics shows the process's count.
	req, _ := http.NewRequest("GET", a.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+a.adminToken())
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if line := fmt.Sprintf("seckill_live_user_events_received_total %d\n", hubs[0]()); !strings.Contains(string(body), line) {
		t.Fatalf("/metrics (%d) lacks %q", res.StatusCode, line)
	}
	t.Logf("user events received: web A %d, web B %d: A's share %.0f%%", got[0], got[1], 100*float64(got[0])/float64(got[0]+got[1]))
}

// A shopper whose socket moves from web A to web B gets, on B, the order
// event of a grab made once the new socket is open: B follows the shopper's
// channel before it answers the upgrade. A second socket of the same
// shopper closing does not stop the first one's events.
func TestLiveUserEventFollowsMovedSocket(t *testing.T) {
	a := startApp(t)
	b := startSecondWeb(t, a)
	_, g := a.liveGoods(100, 10)
	tok, _ := a.newUser()

	first := a.dialWS(tok)
	o := a.grab(tok, g.ID)
	first.next(t, 15*time.Second, "the order event on web A", isOrderEvent(o.ID))
	first.conn.Close()
	eventually(t, 15*time.Second, "web A to let the socket go", func() bool { return a.Web.Hub.Clients() == 0 })

	moved := b.dialWS(tok)
	o = a.grab(tok, g.ID) // at once: nothing else tells that B is ready
	moved.next(t, 15*time.Second, "the order event on web B", isOrderEvent(o.ID))

	second := b.dialWS(tok)
	second.conn.Close()
	eventually(t, 15*time.Second, "web B to let the second socket go", func() bool { return b.Web.Hub.Clients() == 1 })
	o = a.grab(tok, g.ID)
	moved.next(t, 15*time.Second, "the order event after the second socket closed", isOrderEvent(o.ID))
}
