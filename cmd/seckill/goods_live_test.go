package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// With ORDER_TTL=2s an unpaid order expires, its unit comes back, and the same
// user may grab again; a paid order never expires.
func TestOrderExpiryTTL(t *testing.T) {
	t.Parallel()
	a := startApp(t, func(c *Config) { c.OrderTTL = 2 * time.Second })
	mt, g := a.liveGoods(2, 1)
	ut, _ := a.newUser()
	pt, _ := a.newUser()
	o, p := a.grab(ut, g.ID), a.grab(pt, g.ID)
	if st := a.call("POST", fmt.Sprintf("/api/orders/%d/pay", p.ID), pt, nil, nil); st != 200 {
		t.Fatalf("pay: %d", st)
	}
	if left := a.goods(g.ID).Remaining; left != 0 {
		t.Fatalf("remaining %d, want 0", left)
	}
	eventually(t, 8*time.Second, "the unpaid order to expire", func() bool { return a.order(ut, o.ID).Status == "expired" })
	if time.Now().Before(o.ExpiresAt) {
		t.Fatalf("expired before its deadline %s", o.ExpiresAt)
	}
	// What shoppers read is the catalog in memory, told by the expiry's
	// live event, which may come a moment after the order reads expired.
	eventually(t, time.Minute, "the expired unit back on sale (remaining 1)", func() bool { return a.goods(g.ID).Remaining == 1 })
	if left := a.goods(g.ID).Remaining; left != 1 {
		t.Fatalf("remaining after expiry %d, want the unit back (1)", left)
	}
	a.wantError("POST", fmt.Sprintf("/api/orders/%d/pay", o.ID), ut, nil, 409, "expired")
	again := a.grab(ut, g.ID) // the limit mark was cleared
	if again.ID == o.ID || again.Status != "unpaid" {
		t.Fatalf("grab again: %+v", again)
	}
	if wait := time.Until(p.ExpiresAt.Add(1500 * time.Millisecond)); wait > 0 {
		time.Sleep(wait) // past the paid order's deadline and a check of delayed tasks
	}
	if got := a.order(pt, p.ID); got.Status != "paid" {
		t.Fatalf("paid order became %q", got.Status)
	}
	eventually(t, 5*time.Second, "SQLite to record the expiry", func() bool {
		st := a.stats(mt, g.ID)
		return st.DB.Expired == 1 && st.DB.Paid == 1 && st.Expired == 1
	})
}

// wsClient is a test WebSocket connection whose events arrive on a channel.
type wsClient struct {
	conn    *websocket.Conn
	events  chan map[string]any
	backlog []map[string]any // received, not matched yet
}

func (a *testApp) dialWS(token string) *wsClient {
	a.T.Helper()
	u := strings.Replace(a.URL, "http://", "ws://", 1) + "/ws"
	if token != "" {
		u += "?token=" + token
	}
	conn, res, err := websocket.DefaultDialer.Dial(u, http.Header{})
	if err != nil {
		a.T.Fatalf("dial %s: %v (%v)", u, err, res)
	}
	c := &wsClient{conn: conn, events: make(chan map[string]any, 1024)}
	go func() {
		defer close(c.events)
		for {
			var ev map[string]any
			if err := conn.ReadJSON(&ev); err != nil {
				return
			}
			c.events <- ev
		}
	}()
	a.T.Cleanup(func() { conn.Close() })
	return c
}

// next returns the first event, received already or within the wait, that matches.
func (c *wsClient) next(t *testing.T, within time.Duration, what string, match func(map[string]any) bool) map[string]any {
	t.Helper()
	for i, ev := range c.backlog {
		if match(ev) {
			c.backlog = append(c.backlog[:i:i], c.backlog[i+1:]...)
			return ev
		}
	}
	deadline := time.After(within)
	for {
		select {
		case ev, ok := <-c.events:
			if !ok {
				t.Fatalf("socket closed waiting for %s", what)
			}
			if match(ev) {
				return ev
			}
			c.backlog = append(c.backlog, ev)
		case <-deadline:
			t.Fatalf("no %s within %s", what, within)
		}
	}
}

func num(v any) int64 { f, _ := v.(float64); return int64(f) }

// A subscriber sees the stock fall after grabs, and its own order turn expired.
func TestGoodsWebSocket(t *testing.T) {
	t.Parallel()
	a := startApp(t, func(c *Config) { c.OrderTTL = 2 * time.Second })
	_, g := a.liveGoods(10, 1)
	ut, uid := a.newUser()
	ws := a.dialWS(ut)
	for _, topic := range []string{fmt.Sprintf("goods:%d", g.ID), fmt.Sprintf("slot:%d", g.SlotID)} {
		if err := ws.conn.WriteJSON(map[string]string{"op": "subscribe", "topic": topic}); err != nil {
			t.Fatal(err)
		}
		ws.next(t, 2*time.Second, "subscribed "+topic, func(ev map[string]any) bool { return ev["type"] == "subscribed" && ev["topic"] == topic })
	}
	for i := 0; i < 3; i++ { // paid, so only the subscriber's own order expires
		tok, _ := a.newUser()
		if st := a.call("POST", fmt.Sprintf("/api/orders/%d/pay", a.grab(tok, g.ID).ID), tok, nil, nil); st != 200 {
			t.Fatalf("pay: %d", st)
		}
	}
	o := a.grab(ut, g.ID)
	isStock := func(remaining int64) func(map[string]any) bool {
		return func(ev map[string]any) bool {
			if ev["type"] != "stock" || num(ev["goods_id"]) != g.ID {
				return false
			}
			if r := num(ev["remaining"]); r < 6 || r > 10 {
				t.Fatalf("stock event %v outside what the grabs allow", ev)
			}
			return num(ev["remaining"]) == remaining
		}
	}
	ws.next(t, 3*time.Second, "stock falling to 6", isStock(6))
	isOrder := func(status string) func(map[string]any) bool {
		return func(ev map[string]any) bool {
			od, _ := ev["order"].(map[string]any)
			return ev["type"] == "order" && od != nil && num(od["id"]) == o.ID && num(od["user_id"]) == uid && od["status"] == status
		}
	}
	ws.next(t, 3*time.Second, "own order unpaid", isOrder("unpaid"))
	ws.next(t, 8*time.Second, "own order expired", isOrder("expired"))
	ws.next(t, 3*time.Second, "stock back to 7", isStock(7))

	// Another user's socket never sees this user's orders.
	other, _ := a.newUser()
	ows := a.dialWS(other)
	a.grab(ut, g.ID)
	select {
	case ev := <-ows.events:
		if ev["type"] == "order" {
			t.Fatalf("another user's socket got %v", ev)
		}
	case <-time.After(300 * time.Millisecond):
	}
}
