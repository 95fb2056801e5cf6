package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/seckill/seckill/cmd/seckill/bench"
)

// benchCall sends one JSON request as the bearer of token and decodes a 2xx
// answer into out; it returns "ok", the contract error code, or "transport".
// Set-up steps, one at a time, use it on a connection of their own; the load
// itself goes through loadCall.
func (t *benchTarget) benchCall(method, path, token string, body, out any) string {
	var b []byte
	if body != nil {
		b, _ = json.Marshal(body)
	}
	st, raw, err := t.load.Do(t.setupConn, method, path, token, b)
	if err != nil {
		return "transport"
	}
	return outcome(st, raw, out)
}

// loadCall is one request of the load: a bodiless POST to path by shopper
// i (its token, from its own address) on worker w's own connection (see bench.Client).
func (t *benchTarget) loadCall(w int, path string, i int64, out any) string {
	return t.callVia(t.load, w, path, i, out)
}

// callVia is loadCall through client (the load's connections to another process).
func (t *benchTarget) callVia(client *bench.Client, w int, path string, i int64, out any) string {
	k := i % int64(len(t.tokens))
	st, raw, err := client.DoFrom(w, t.addrs[k], "POST", path, t.tokens[k], nil)
	if err != nil {
		return "transport"
	}
	return outcome(st, raw, out)
}

// healthz is one GET /healthz on worker w's connection: "ok" or what went wrong.
func (t *benchTarget) healthz(w int) string {
	st, _, err := t.load.Do(w, "GET", "/healthz", "", nil)
	if err != nil {
		return "transport"
	}
	return outcome(st, nil, nil)
}

// outcome turns an answer into "ok" (decoding a 2xx body into out) or the
// contract's error code. The error body leads with its code; reading it
// without a full JSON decode keeps the generator's cost per request low.
func outcome(status int, raw []byte, out any) string {
	if status/100 == 2 {
		if out != nil {
			if err := json.Unmarshal(raw, out); err != nil {
				return "bad_json"
			}
		}
		return "ok"
	}
	if i := bytes.Index(raw, codePrefix); i >= 0 {
		rest := raw[i+len(codePrefix):]
		if j := bytes.IndexByte(rest, '"'); j > 0 {
			return string(rest[:j])
		}
	}
	return fmt.Sprintf("http_%d", status)
}

var codePrefix = []byte(`"code":"`)

// mustCall is benchCall for set-up steps, where anything but success is an error.
func (t *benchTarget) mustCall(method, path, token string, body, out any) error {
	if code := t.benchCall(method, path, token, body, out); code != "ok" {
		return fmt.Errorf("%s %s: %s", method, path, code)
	}
	return nil
}

// waitFlushed polls the admin stats at path into out until flushed says the
// batch flush has caught up, for 30 s at most: the checks then show what is missing.
func (t *benchTarget) waitFlushed(ctx context.Context, path string, out any, flushed func() bool) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := t.mustCall("GET", path, t.admin, nil, out); err != nil {
			return err
		}
		if flushed() || time.Now().After(deadline) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// watchers are WebSocket clients recording when each stock-like event arrived.
type watchers struct {
	mu     sync.Mutex
	events [][]watchEvent // per socket
	conns  []*websocket.Conn
	wg     sync.WaitGroup
}

type watchEvent struct {
	at        time.Time
	remaining int64
}

// watch opens n sockets subscribed to topic; field names the event's counter ("remaining" or "remaining_count").
func (t *benchTarget) watch(n int, topic, field string) (*watchers, error) {
	w := &watchers{}
	for i := 0; i < n; i++ {
		c, _, err := websocket.DefaultDialer.Dial(WSURL(t.URL), http.Header{"X-Forwarded-For": {shopperAddr(i)}})
		if err != nil {
			w.close()
			return nil, err
		}
		if err := c.WriteJSON(map[string]string{"op": "subscribe", "topic": topic}); err != nil {
			w.close()
			return nil, err
		}
		var ack map[string]any
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if err := c.ReadJSON(&ack); err != nil || ack["type"] != "subscribed" {
			w.close()
			return nil, fmt.Errorf("subscribe %s: %v %v", topic, ack, err)
		}
		c.SetReadDeadline(time.Time{})
		w.conns = append(w.conns, c)
		w.events = append(w.events, nil)
		w.wg.Add(1)
		go func(i int) {
			defer w.wg.Done()
			for {
				var ev map[string]any
				if err := c.ReadJSON(&ev); err != nil {
					return
				}
				if v, ok := ev[field].(float64); ok {
					w.mu.Lock()
					w.events[i] = append(w.events[i], watchEvent{at: time.Now(), remaining: int64(v)})
					w.mu.Unlock()
				}
			}
		}(i)
	}
	return w, nil
}

func (w *watchers) close() {
	for _, c := range w.conns {
		c.Close()
	}
	w.wg.Wait()
}

// lag matches each successful grab to the first event that shows stock at or
// below what that grab left, and returns the p50 and p99 delays in ms. The
// k-th grab to complete is taken to have left stock-k (completion order is
// close to decision order, and coalescing makes events carry the latest value).
func (w *watchers) lag(stock int64, grabsDone []time.Time) (p50, p99 float64, n int) {
	sort.Slice(grabsDone, func(i, j int) bool { return grabsDone[i].Before(grabsDone[j]) })
	var lags []float64
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, events := range w.events { // each socket's events arrive in order
		for k, done := range grabsDone {
			left := stock - int64(k+1)
			for _, e := range events {
				if e.remaining <= left && !e.at.Before(done.Add(-time.Millisecond)) {
					lags = append(lags, float64(e.at.Sub(done).Microseconds())/1000)
					break
				}
			}
		}
	}
	if len(lags) == 0 {
		return 0, 0, 0
	}
	sort.Float64s(lags)
	q := func(p float64) float64 { return lags[min(len(lags)-1, int(p*float64(len(lags))))] }
	return q(0.5), q(0.99), len(lags)
}

// shopperAddr is the client address the load gives shopper k, as a proxy in
// front of the server would forward it: every shopper comes from an address
// of its own, as in a real sale, so RATE_IP holds each one to its share.
func shopperAddr(k int) string {
	return fmt.Sprintf("10.%d.%d.%d", (k>>16)&255, (k>>8)&255, k&255)
}
