package wshub_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gorilla/websocket"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/web/wshub"
)

// tokens stands in for account.Tokens: "u<id>" is a valid token of user id,
// whose session lives until end is called.
type tokens struct {
	mu    sync.Mutex
	ended map[string]bool
}

func (tk *tokens) Verify(token string) (model.Claims, error) {
	id, err := strconv.ParseInt(strings.TrimPrefix(token, "u"), 10, 64)
	if err != nil || !strings.HasPrefix(token, "u") || id <= 0 {
		return model.Claims{}, db.ErrUnauthorized
	}
	return model.Claims{UserID: id, Role: model.RoleUser, SessionID: token}, nil
}

func (tk *tokens) Live(cl model.Claims) bool {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	return !tk.ended[cl.SessionID]
}

func (tk *tokens) end(sessionID string) {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	tk.ended[sessionID] = true
}

type env struct {
	t      *testing.T
	hub    *wshub.Hub
	tokens *tokens
	events *live.Events
	url    string
}

// start runs a hub behind a bare Fiber app on :0 (with the status table of
// the codes the hub answers), every client coming from one address.
func start(t *testing.T, edit func(*wshub.Config)) *env {
	t.Helper()
	r := dbtest.Redis(t)
	tk := &tokens{ended: map[string]bool{}}
	cfg := wshub.Config{Redis: r.Client, Tokens: tk, ReadWindow: 5 * time.Second,
		Identify: func(*fiber.Ctx) (model.Claims, netip.Addr) { return model.Claims{}, netip.MustParseAddr("192.0.2.1") }}
	if edit != nil {
		edit(&cfg)
	}
	h := wshub.New(cfg)
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.Loops().Start() // as Main does; Close stops them
	status := map[string]int{db.EINVALID: 400, db.EUNAUTHORIZED: 401, db.EFORBIDDEN: 403, db.ERATELIMITED: 429}
	app := fiber.New(fiber.Config{DisableStartupMessage: true, ErrorHandler: func(c *fiber.Ctx, err error) error {
		code := db.ErrorCode(err)
		if status[code] == 0 {
			return c.SendStatus(500)
		}
		return c.Status(status[code]).JSON(map[string]any{"error": map[string]string{"code": code}})
	}})
	app.Server().KeepHijackedConns = true
	app.Get("/ws", h.Handle)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go app.Listener(ln)
	ev := live.New(r.Client)
	t.Cleanup(func() {
		ev.Close()
		app.Shutdown()
		h.Close()
	})
	return &env{t: t, hub: h, tokens: tk, events: ev, url: "ws://" + ln.Addr().String() + "/ws"}
}

// dial opens a socket (with ?token= when token is set); it fails the test
// unless the server answers with status.
func (e *env) dial(token string, status int) *websocket.Conn {
	e.t.Helper()
	u := e.url
	if token != "" {
		u += "?token=" + token
	}
	ws, resp, err := websocket.DefaultDialer.Dial(u, nil)
	got := 0
	if resp != nil {
		got = resp.StatusCode
	}
	if got != status {
		e.t.Fatalf("dial %s: status %d (%v), want %d", u, got, err, status)
	}
	if ws != nil {
		e.t.Cleanup(func() { ws.Close() })
	}
	return ws
}

// next reads the socket's next message, waiting generously.
func (e *env) next(ws *websocket.Conn) map[string]any {
	e.t.Helper()
	ws.SetReadDeadline(time.Now().Add(time.Minute))
	_, b, err := ws.ReadMessage()
	if err != nil {
		e.t.Fatalf("read: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		e.t.Fatalf("read %q: %v", b, err)
	}
	return m
}

func (e *env) send(ws *websocket.Conn, op, topic string) {
	e.t.Helper()
	if err := ws.WriteJSON(map[string]string{"op": op, "topic": topic}); err != nil {
		e.t.Fatal(err)
	}
}

// attached waits until the hub holds n sockets (it takes each on after
// the handshake the dial returned from); the deadline only bounds a broken run.
func (e *env) attached(n int) {
	e.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for e.hub.Clients() < n {
		if time.Now().After(deadline) {
			e.t.Fatalf("the hub holds %d sockets, want %d", e.hub.Clients(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (e *env) publish(topic string, n int) {
	e.t.Helper()
	if err := e.events.Publish(context.Background(), topic, map[string]any{"type": "probe", "topic": topic, "n": n}); err != nil {
		e.t.Fatal(err)
	}
}

func errorCode(m map[string]any) string {
	if m["type"] != "error" {
		return ""
	}
	code, _ := m["error"].(map[string]any)["code"].(string)
	return code
}

// An event reaches the sockets following its topic and no other; an
// unsubscribed topic stops arriving; a bad op is answered "invalid".
func TestEventsReachTheirTopicsFollowers(t *testing.T) {
	e := start(t, nil)
	a, b := e.dial("", 101), e.dial("", 101)
	e.send(a, "subscribe", "goods:1")
	if m := e.next(a); m["type"] != "subscribed" || m["topic"] != "goods:1" {
		t.Fatalf("subscribe answer %v", m)
	}
	e.send(b, "subscribe", "goods:2")
	e.next(b)

	// Events of one channel arrive in order, so the first event b sees
	// shows whether goods:1's reached it.
	e.publish("goods:1", 1)
	e.publish("goods:2", 2)
	if m := e.next(a); m["topic"] != "goods:1" {
		t.Fatalf("a got %v, want the goods:1 event", m)
	}
	if m := e.next(b); m["topic"] != "goods:2" {
		t.Fatalf("b got %v, want the goods:2 event (goods:1's must not reach it)", m)
	}

	e.send(a, "unsubscribe", "goods:1")
	if m := e.next(a); m["type"] != "unsubscribed" {
		t.Fatalf("unsubscribe answer %v", m)
	}
	e.send(a, "subscribe", "goods:3")
	e.next(a)
	e.publish("goods:1", 3)
	e.publish("goods:3", 4)
	if m := e.next(a); m["topic"] != "goods:3" {
		t.Fatalf("a got %v after unsubscribing goods:1, want the goods:3 event", m)
	}

	for _, bad := range [][2]string{{"subscribe", "user:1"}, {"subscribe", "goods:0"}, {"shout", "goods:1"}} {
		e.send(a, bad[0], bad[1])
		if m := e.next(a); errorCode(m) != db.EINVALID {
			t.Errorf("%v: got %v, want an invalid error", bad, m)
		}
	}
	if n := e.hub.Clients(); n != 2 {
		t.Errorf("Clients() = %d, want 2", n)
	}
}

// A socket opened with a token follows its user's topic from the start, and
// is closed with 1008 once its session ends.
func TestSignedInSocketFollowsItsUserUntilTheSessionEnds(t *testing.T) {
	e := start(t, nil)
	e.dial("bogus", 401)
	ws := e.dial("u7", 101)
	other := e.dial("u8", 101)
	e.attached(2) // the hub takes a socket on after its handshake: publish once both follow their users
	e.publish(live.TopicUser(7), 1)
	e.publish(live.TopicUser(8), 2)
	if m := e.next(ws); m["topic"] != live.TopicUser(7) {
		t.Fatalf("got %v, want user 7's event", m)
	}
	if m := e.next(other); m["topic"] != live.TopicUser(8) {
		t.Fatalf("user 8 got %v, want its own event only", m)
	}

	e.tokens.end("u7")
	ws.SetReadDeadline(time.Now().Add(time.Minute))
	_, _, err := ws.ReadMessage()
	if !websocket.IsCloseError(err, websocket.ClosePolicyViolation) {
		t.Fatalf("after the session ended: %v, want close 1008", err)
	}
	deadline := time.Now().Add(time.Minute)
	for e.hub.Clients() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("Clients() = %d, want 1 once the ended socket is gone", e.hub.Clients())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Anonymous sockets of one address are capped with 429; a signed-in socket
// is not counted, and a closed anonymous socket frees its slot.
func TestAnonymousSocketsPerAddressAreCapped(t *testing.T) {
	e := start(t, func(c *wshub.Config) { c.MaxAnonPerIP = 2 })
	first := e.dial("", 101)
	e.dial("", 101)
	e.dial("", 429)
	e.dial("u5", 101)
	first.Close()
	deadline := time.Now().Add(time.Minute)
	for {
		ws, resp, err := websocket.DefaultDialer.Dial(e.url, nil)
		if err == nil {
			ws.Close()
			break
		}
		if resp == nil || resp.StatusCode != 429 || time.Now().After(deadline) {
			t.Fatalf("dial after closing a socket: %v (%d clients)", err, e.hub.Clients())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A socket follows at most 64 public topics; the next is refused with limit_reached.
func TestTopicsPerSocketAreCapped(t *testing.T) {
	e := start(t, nil)
	ws := e.dial("", 101)
	for i := 1; i <= 64; i++ {
		e.send(ws, "subscribe", fmt.Sprintf("goods:%d", i))
		if m := e.next(ws); m["type"] != "subscribed" {
			t.Fatalf("subscription %d: %v", i, m)
		}
	}
	e.send(ws, "subscribe", "goods:65")
	if m := e.next(ws); errorCode(m) != db.ELIMITREACHED || m["topic"] != "goods:65" {
		t.Fatalf("65th subscription: %v, want limit_reached", m)
	}
}

// Close disconnects every client.
func TestCloseDisconnectsClients(t *testing.T) {
	e := start(t, nil)
	ws := e.dial("", 101)
	e.send(ws, "subscribe", "goods:1")
	e.next(ws)
	e.hub.Close()
	if n := e.hub.Clients(); n != 0 {
		t.Errorf("Clients() = %d after Close", n)
	}
	ws.SetReadDeadline(time.Now().Add(time.Minute))
	if _, _, err := ws.ReadMessage(); err == nil || strings.Contains(err.Error(), "timeout") {
		t.Fatalf("read after Close: %v, want the connection closed", err)
	}
}

// A foreign Origin is refused with 403 before the upgrade.
func TestForeignOriginIsRefused(t *testing.T) {
	e := start(t, nil)
	_, resp, err := websocket.DefaultDialer.Dial(e.url, http.Header{"Origin": {"https://evil.example"}})
	if err == nil || resp == nil || resp.StatusCode != 403 {
		t.Fatalf("foreign origin: %v, want 403", err)
	}
}

// Hello is every socket's first message, and Broadcast reaches every socket
// of the hub whatever it follows.
func TestHelloFirstAndBroadcastToAll(t *testing.T) {
	var hello atomic.Value
	hello.Store(`{"type":"hello","n":1}`)
	e := start(t, func(c *wshub.Config) { c.Hello = func() []byte { return []byte(hello.Load().(string)) } })
	a := e.dial("", 101)
	if m := e.next(a); m["type"] != "hello" || m["n"] != float64(1) {
		t.Fatalf("first message %v, want the hello", m)
	}
	hello.Store(`{"type":"hello","n":2}`)
	b := e.dial("", 101)
	if m := e.next(b); m["type"] != "hello" || m["n"] != float64(2) {
		t.Fatalf("a later socket's first message %v, want the hello of now", m)
	}
	e.send(b, "subscribe", "goods:1")
	e.next(b)
	e.attached(2)
	e.hub.Broadcast([]byte(`{"type":"all"}`))
	for i, ws := range []*websocket.Conn{a, b} {
		if m := e.next(ws); m["type"] != "all" {
			t.Fatalf("socket %d got %v, want the broadcast", i, m)
		}
	}
}

// A Close after a Start that failed (a process whose opening timed out
// closes what it opened) does nothing, and does not panic.
func TestCloseAfterFailedStart(t *testing.T) {
	h := wshub.New(wshub.Config{Redis: dbtest.Redis(t).Client, Tokens: &tokens{ended: map[string]bool{}}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.Start(ctx); err == nil {
		t.Fatal("Start on a cancelled context succeeded")
	}
	if ls := h.Loops(); len(ls) > 0 {
		t.Fatalf("after a failed Start the hub has %d loops to start, want none", len(ls))
	}
	h.Close()
}
