package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/web/ratelimit"
)

// startAbuseApp starts a process like startApp, with a configuration option
// and a tweak of Main's knobs (either may be nil).
func startAbuseApp(t *testing.T, opt func(*Config), tweak func(*Main)) *testApp {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.DBPath = filepath.Join(t.TempDir(), "seckill.db")
	cfg.DatabaseURL = dbtest.DatabaseURL(t)
	cfg.RedisURL = dbtest.RedisURL(t)
	cfg.AdminPassword = testAdminPassword
	cfg.SessionSecret = "test-session-secret-0123456789"
	cfg.RateGrab, cfg.RateAuth, cfg.RateIP = ratelimit.Rate{}, ratelimit.Rate{}, ratelimit.Rate{}
	if opt != nil {
		opt(&cfg)
	}
	var tweaks []func(*Main)
	if tweak != nil {
		tweaks = append(tweaks, tweak)
	}
	return startMain(t, cfg, ModeServe, tweaks...)
}

// rawExchange writes req on a fresh connection to the app and reads one answer.
func rawExchange(t *testing.T, a *testApp, req string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(a.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	return readAnswer(t, c)
}

func readAnswer(t *testing.T, c net.Conn) (*http.Response, string) {
	t.Helper()
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	return res, string(b)
}

// wantJSONError fails unless the answer is status with the contract's JSON error code.
func wantJSONError(t *testing.T, what string, res *http.Response, body string, status int, code string) {
	t.Helper()
	var e apiError
	if res.StatusCode != status || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") ||
		json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != code {
		t.Errorf("%s: got %d %s %q, want %d JSON %q", what, res.StatusCode, res.Header.Get("Content-Type"), body, status, code)
	}
}

// Bodies over 64 KiB, oversized headers and malformed requests get the
// contract's JSON under /api, even when fasthttp refuses them itself.
func TestAbuseDoorsHTTPLayerAnswersJSON(t *testing.T) {
	a := startApp(t)
	host := strings.TrimPrefix(a.URL, "http://")

	// A 10 MB body is refused on its declared length, before a byte of it is sent.
	res, body := rawExchange(t, a, "POST /api/auth/login HTTP/1.1\r\nHost: "+host+"\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n")
	wantJSONError(t, "10 MB declared body", res, body, 413, "too_large")

	// Just over the limit, declared by a client that waits for 100 Continue: refused at once.
	res, body = rawExchange(t, a, "POST /api/auth/login HTTP/1.1\r\nHost: "+host+"\r\nContent-Type: application/json\r\nContent-Length: 65537\r\nExpect: 100-continue\r\n\r\n")
	wantJSONError(t, "65537-byte declared body", res, body, 413, "too_large")

	// A chunked body is cut off once it passes the limit. The chunk is
	// exactly one byte over, so nothing is left unread when the server closes.
	over := strings.Repeat("x", 64<<10+1)
	res, body = rawExchange(t, a, "POST /api/auth/login HTTP/1.1\r\nHost: "+host+"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"+
		strconv.FormatInt(int64(len(over)), 16)+"\r\n"+over+"\r\n")
	wantJSONError(t, "chunked body over 64 KiB", res, body, 413, "too_large")

	// A 20 KB cookie: 431 with too_large.
	res, body = rawExchange(t, a, "GET /api/me HTTP/1.1\r\nHost: "+host+"\r\nCookie: c="+strings.Repeat("a", 20<<10)+"\r\n\r\n")
	wantJSONError(t, "20 KB cookie", res, body, 431, "too_large")

	// A header line fasthttp cannot parse: 400 invalid.
	res, body = rawExchange(t, a, "GET /api/me HTTP/1.1\r\nHost: "+host+"\r\nContent-Length: nope\r\n\r\n")
	wantJSONError(t, "malformed header", res, body, 400, "invalid")

	// Broken chunked framing: 400 invalid.
	res, body = rawExchange(t, a, "POST /api/auth/login HTTP/1.1\r\nHost: "+host+"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n")
	wantJSONError(t, "broken chunked body", res, body, 400, "invalid")

	// Pages still get pages.
	res, _ = rawExchange(t, a, "GET /login HTTP/1.1\r\nHost: "+host+"\r\nCookie: c="+strings.Repeat("a", 20<<10)+"\r\n\r\n")
	if res.StatusCode != 431 || strings.Contains(res.Header.Get("Content-Type"), "json") {
		t.Errorf("page with a 20 KB cookie: %d %s, want 431 and no JSON", res.StatusCode, res.Header.Get("Content-Type"))
	}

	// Bodies within the limit still arrive whole, chunked or not, and forms too.
	name := fmt.Sprintf("d%d", time.Now().UnixNano()%1e9)
	reg := `{"username":"` + name + `","password":"password123","pad":"` + strings.Repeat("p", 60<<10) + `"}`
	res, body = rawExchange(t, a, "POST /api/auth/register HTTP/1.1\r\nHost: "+host+"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"+
		strconv.FormatInt(int64(len(reg)), 16)+"\r\n"+reg+"\r\n0\r\n\r\n")
	if res.StatusCode != 201 {
		t.Errorf("60 KiB chunked registration: %d %s", res.StatusCode, body)
	}
	login := `{"username":"` + name + `","password":"password123"}`
	res, body = rawExchange(t, a, "POST /api/auth/login HTTP/1.1\r\nHost: "+host+"\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(login))+"\r\n\r\n"+login)
	if res.StatusCode != 200 {
		t.Errorf("login: %d %s", res.StatusCode, body)
	}
	form := url.Values{"username": {name}, "password": {"password123"}, "pad": {strings.Repeat("f", 20<<10)}}.Encode()
	res, _ = rawExchange(t, a, "POST /login HTTP/1.1\r\nHost: "+host+"\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: "+strconv.Itoa(len(form))+"\r\n\r\n"+form)
	if res.StatusCode != 403 { // no CSRF token: the form was read and judged, not refused for its size
		t.Errorf("20 KiB form: %d, want 403 for the missing CSRF token", res.StatusCode)
	}
}

// blockedInBodyRead counts the server goroutines waiting for a request body.
func blockedInBodyRead() int {
	var buf bytes.Buffer
	pprof.Lookup("goroutine").WriteTo(&buf, 1)
	n := 0
	for _, rec := range strings.Split(buf.String(), "\n\n") {
		if strings.Contains(rec, "fasthttp.appendBodyFixedSize") {
			count, _, _ := strings.Cut(rec, " @")
			count = strings.TrimPrefix(count, "goroutine profile: total ")
			if i := strings.LastIndexByte(count, '\n'); i >= 0 {
				count = count[i+1:]
			}
			c, _ := strconv.Atoi(count)
			n += c
		}
	}
	return n
}

func memStats() runtime.MemStats {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms
}

// A client that declares a 64 KiB body and trickles it must not make the
// server hold 64 KiB for it: 1,000 such connections cost at most 64 MiB.
func TestAbuseDoorsSlowBodiesAreCheap(t *testing.T) {
	const conns = 1000
	a := startApp(t)
	host := strings.TrimPrefix(a.URL, "http://")
	before := memStats()
	head := "POST /api/auth/login HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\nContent-Length: 65536\r\n\r\n{"
	var cs []net.Conn
	for i := 0; i < conns; i++ {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, head); err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	eventually(t, 60*time.Second, "every connection to wait for its body", func() bool { return blockedInBodyRead() >= conns })
	after := memStats()
	grown := int64(after.HeapInuse) - int64(before.HeapInuse)
	stacks := int64(after.StackInuse) - int64(before.StackInuse)
	t.Logf("%d connections declaring 64 KiB and sending 1 byte: heap in use +%.1f MiB (%.1f KiB each), goroutine stacks +%.1f MiB (%.1f KiB each); client side included",
		conns, float64(grown)/(1<<20), float64(grown)/conns/1024, float64(stacks)/(1<<20), float64(stacks)/conns/1024)
	if grown > 64<<20 {
		t.Errorf("heap grew %.1f MiB for %d slow bodies, want at most 64 MiB", float64(grown)/(1<<20), conns)
	}
	// They are still served: the last sends the rest of its body and gets its answer.
	last := cs[len(cs)-1]
	if _, err := io.WriteString(last, strings.Repeat(" ", 65534)+"}"); err != nil {
		t.Fatal(err)
	}
	last.SetReadDeadline(time.Now().Add(20 * time.Second))
	res, body := readAnswer(t, last)
	wantJSONError(t, "the completed slow body", res, body, 401, "unauthorized")
}

// One address may hold MaxConnsPerIP connections; the next is closed at accept.
func TestAbuseDoorsConnsPerAddress(t *testing.T) {
	b := startAbuseApp(t, nil, func(m *Main) { m.MaxConnsPerIP = 3 })
	host := strings.TrimPrefix(b.URL, "http://")
	var held []net.Conn
	for i := 0; i < 3; i++ {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	// Each held connection is served (so it has been accepted and counted).
	for _, c := range held {
		io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		if res, _ := readAnswer(t, c); res.StatusCode != 200 {
			t.Fatalf("held connection: %d", res.StatusCode)
		}
	}
	extra, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	io.WriteString(extra, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	extra.SetReadDeadline(time.Now().Add(20 * time.Second))
	if n, err := extra.Read(make([]byte, 64)); err == nil {
		t.Fatalf("a fourth connection from one address was served (%d bytes)", n)
	}
	// Closing one frees its place once the server sees it go.
	held[0].Close()
	eventually(t, 20*time.Second, "a freed place", func() bool {
		c, err := net.Dial("tcp", host)
		if err != nil {
			return false
		}
		defer c.Close()
		io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		return err == nil && res.StatusCode == 200
	})
}

// Every response but /healthz carries the security headers; pages have no inline script for the CSP to block.
func TestAbuseDoorsSecurityHeaders(t *testing.T) {
	a := startApp(t, func(c *Config) { c.TrustedProxies = "127.0.0.1" }) // a TLS-terminating proxy on loopback
	for _, path := range []string{"/", "/login", "/api/slots", "/api/no-such", "/static/app.css", "/readyz"} {
		res, err := http.Get(a.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		for h, want := range map[string]string{
			"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self' ws: wss:; frame-ancestors 'none'; base-uri 'self'; form-action 'self'; object-src 'none'",
			"X-Content-Type-Options":  "nosniff",
			"Referrer-Policy":         "same-origin",
			"X-Frame-Options":         "DENY",
		} {
			if got := res.Header.Get(h); got != want {
				t.Errorf("%s: %s = %q, want %q", path, h, got, want)
			}
		}
		if hsts := res.Header.Get("Strict-Transport-Security"); hsts != "" {
			t.Errorf("%s over plain HTTP: Strict-Transport-Security %q", path, hsts)
		}
		if bytes.Contains(body, []byte("<script>")) || bytes.Contains(body, []byte(" onclick=")) {
			t.Errorf("%s has inline script the CSP would block", path)
		}
	}
	// Behind the trusted TLS-terminating proxy the request came over https: HSTS.
	req, _ := http.NewRequest("GET", a.URL+"/", nil)
	req.Header.Set("X-Forwarded-Proto", "https")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if got := res.Header.Get("Strict-Transport-Security"); got != "max-age=31536000" {
		t.Errorf("over https: Strict-Transport-Security %q", got)
	}
	// Asynqmon sets its flags in an inline script: /monitor gets a CSP that allows it, for admins only.
	req, _ = http.NewRequest("GET", a.URL+"/monitor/", nil)
	req.Header.Set("Authorization", "Bearer "+a.adminToken())
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	csp := res.Header.Get("Content-Security-Policy")
	if res.StatusCode != 200 || !bytes.Contains(body, []byte("<script>window.FLAG_ROOT_PATH")) {
		t.Fatalf("monitor: %d, no inline flags script", res.StatusCode)
	}
	if !strings.Contains(csp, "script-src 'self' 'unsafe-inline'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("monitor CSP %q does not let its inline script run or still lets it be framed", csp)
	}
}

// /metrics answers an admin or a Bearer of METRICS_TOKEN, nobody else; /readyz never shows error text.
func TestAbuseDoorsOpsEndpoints(t *testing.T) {
	r := newStoppableRedis(t)
	var logs syncBuffer
	a := startAbuseApp(t, func(c *Config) { c.RedisURL = r.url; c.MetricsToken = "metrics-secret-token" },
		func(m *Main) { m.Log = slog.New(slog.NewTextHandler(&logs, nil)) })
	user, _ := a.newUser()
	for _, tc := range []struct {
		auth   string
		status int
		code   string
	}{
		{"", 401, "unauthorized"},
		{"Bearer wrong-token", 401, "unauthorized"},
		{"Bearer " + user, 403, "forbidden"},
		{"Bearer metrics-secret-token", 200, ""},
		{"Bearer " + a.adminToken(), 200, ""},
	} {
		req, _ := http.NewRequest("GET", a.URL+"/metrics", nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if tc.status == 200 {
			if res.StatusCode != 200 || !bytes.Contains(b, []byte("seckill_http_requests_total")) {
				t.Errorf("metrics with %q: %d", tc.auth, res.StatusCode)
			}
			continue
		}
		wantJSONError(t, "metrics with "+tc.auth, res, string(b), tc.status, tc.code)
	}
	// A person following make run's link in a browser is sent to sign in,
	// and back to /metrics after; a signed-in shopper gets a page, not JSON.
	browserReq := func(cookie string) *http.Response {
		req, _ := http.NewRequest("GET", a.URL+"/metrics", nil)
		req.Header.Set("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: "seckill_session", Value: cookie})
		}
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	if res := browserReq(""); res.StatusCode != 303 || res.Header.Get("Location") != "/login?next=%2Fmetrics" {
		t.Errorf("metrics in a browser, signed out: %d to %q, want 303 to the sign-in", res.StatusCode, res.Header.Get("Location"))
	}
	if res := browserReq(user); res.StatusCode != 403 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Errorf("metrics in a shopper's browser: %d %q, want a 403 page", res.StatusCode, res.Header.Get("Content-Type"))
	}
	// The admin's session cookie works too.
	req, _ := http.NewRequest("GET", a.URL+"/metrics", nil)
	req.AddCookie(&http.Cookie{Name: "seckill_session", Value: a.adminToken()})
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 200 {
		t.Errorf("metrics with the admin's cookie: %v %v", res.StatusCode, err)
	}

	if st, body := get(t, a.URL+"/readyz"); st != 200 || body != `{"database":"ok","redis":"ok"}` {
		t.Errorf("readyz up: %d %s", st, body)
	}
	r.stop()
	var body string
	eventually(t, 10*time.Second, "readyz to turn 503", func() bool {
		var st int
		st, body = get(t, a.URL+"/readyz")
		return st == 503
	})
	if body != `{"database":"ok","redis":"down"}` {
		t.Errorf("readyz with Redis down: %s, want which part is down and no error text", body)
	}
	start := time.Now()
	for i := 0; i < 50; i++ {
		get(t, a.URL+"/readyz")
	}
	// The wait for the first 503 above failed once too, and that failure is logged.
	checkThrottled(t, &logs, "not ready", 50+1, start, func() { get(t, a.URL+"/readyz") })
}

// checkThrottled fails unless the lines logged with msg number at most one a
// second since start (plus the first) and, with the counts of lines they held
// back, account for exactly the failures. The failures after the last line
// are counted by the next one, so fail calls one more failing request until
// that line comes (an event to wait on, not a window).
func checkThrottled(t *testing.T, logs *syncBuffer, msg string, failures int, start time.Time, fail func()) {
	t.Helper()
	count := func() (lines, counted int) {
		for _, l := range strings.Split(logs.String(), "\n") {
			if !strings.Contains(l, msg) {
				continue
			}
			lines++
			counted++
			if _, after, ok := strings.Cut(l, "suppressed="); ok {
				n, _ := strconv.Atoi(strings.Fields(after)[0])
				counted += n
			}
		}
		return lines, counted
	}
	before, _ := count()
	for {
		fail()
		failures++
		if lines, _ := count(); lines > before {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	lines, counted := count()
	elapsed := time.Since(start)
	if max := int(elapsed/time.Second) + 2; lines < 2 || lines > max {
		t.Errorf("%d failures in %s logged %d %q lines, want 2 to %d (once a second)", failures, elapsed, lines, msg, max)
	}
	if counted != failures {
		t.Errorf("the %q lines account for %d failures of %d", msg, counted, failures)
	}
	t.Logf("%d failures in %s: %d %q lines", failures, elapsed.Round(time.Millisecond), lines, msg)
}

// syncBuffer is a bytes.Buffer a logger and a test may share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A socket follows at most 64 topics, sends frames of at most 4 KiB (else
// 1009), and one address holds at most MaxAnonSocketsPerIP anonymous sockets.
func TestAbuseDoorsWebSocketCaps(t *testing.T) {
	a := startAbuseApp(t, nil, func(m *Main) { m.MaxAnonSocketsPerIP = 3 })
	c := dialWS(t, a.URL, "")
	for i := 1; i <= 64; i++ {
		c.WriteJSON(map[string]string{"op": "subscribe", "topic": fmt.Sprintf("goods:%d", i)})
	}
	for i := 1; i <= 64; i++ {
		waitEvent(t, c, func(ev map[string]any) bool { return ev["type"] == "subscribed" })
	}
	c.WriteJSON(map[string]string{"op": "subscribe", "topic": "goods:65"})
	ev := waitEvent(t, c, func(ev map[string]any) bool { return ev["type"] != "subscribed" })
	if e, _ := ev["error"].(map[string]any); ev["type"] != "error" || e["code"] != "limit_reached" {
		t.Fatalf("65th topic: %v, want an error frame with limit_reached", ev)
	}
	// Dropping one makes room again.
	c.WriteJSON(map[string]string{"op": "unsubscribe", "topic": "goods:1"})
	waitEvent(t, c, func(ev map[string]any) bool { return ev["type"] == "unsubscribed" })
	subscribe(t, c, "goods:65")

	// Two more anonymous sockets fit; the fourth is refused before the upgrade.
	dialWS(t, a.URL, "")
	big := dialWS(t, a.URL, "")
	u := "ws" + strings.TrimPrefix(a.URL, "http") + "/ws"
	_, res, err := websocket.DefaultDialer.Dial(u, nil)
	if err == nil || res == nil {
		t.Fatalf("a fourth anonymous socket was accepted: %v", err)
	}
	b, _ := io.ReadAll(res.Body)
	wantJSONError(t, "fourth anonymous socket", res, string(b), 429, "rate_limited")
	// A logged-in user is not counted against the address.
	token, _ := a.newUser()
	dialWS(t, a.URL, token)

	// A frame over 4 KiB closes the socket with 1009.
	big.WriteMessage(websocket.TextMessage, bytes.Repeat([]byte("x"), 5000))
	big.SetReadDeadline(time.Now().Add(15 * time.Second))
	for err = nil; err == nil; {
		var msg []byte
		if _, msg, err = big.ReadMessage(); err == nil {
			t.Logf("before the close: %s", msg)
		}
	}
	if !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
		t.Fatalf("after a 5000-byte frame: %v, want close 1009", err)
	}
	// Its place is free again.
	eventually(t, 10*time.Second, "the closed socket's place", func() bool {
		c, res, err := websocket.DefaultDialer.Dial(u, nil)
		if err == nil {
			c.Close()
		} else if res != nil {
			res.Body.Close()
		}
		return err == nil
	})
}

// With Redis down a grab answers 503 unavailable with Retry-After, and a
// burst of failures logs a few lines, not one each.
func TestAbuseDoorsRedisDownIsUnavailable(t *testing.T) {
	r := newStoppableRedis(t)
	var logs syncBuffer
	a := startAbuseApp(t, func(c *Config) { c.RedisURL = r.url },
		func(m *Main) { m.Log = slog.New(slog.NewTextHandler(&logs, nil)) })
	_, g := a.liveGoods(1000, 1)
	token, _ := a.newUser()
	a.grab(token, g.ID)
	other, _ := a.newUser()
	a.call("GET", "/api/me", other, nil, nil) // the token is verified and cached while Redis is up
	r.stop()

	req, _ := http.NewRequest("POST", fmt.Sprintf("%s/api/goods/%d/grab", a.URL, g.ID), nil)
	req.Header.Set("Authorization", "Bearer "+other)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	wantJSONError(t, "grab with Redis down", res, string(b), 503, "unavailable")
	if res.Header.Get("Retry-After") != "1" {
		t.Errorf("Retry-After %q, want 1", res.Header.Get("Retry-After"))
	}

	const burst = 200
	start := time.Now()
	var wg sync.WaitGroup
	codes := make(chan int, burst)
	for w := 0; w < 20; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < burst/20; i++ {
				req, _ := http.NewRequest("POST", fmt.Sprintf("%s/api/goods/%d/grab", a.URL, g.ID), nil)
				req.Header.Set("Authorization", "Bearer "+other)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					codes <- 0
					continue
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				codes <- res.StatusCode
			}
		}()
	}
	wg.Wait()
	close(codes)
	for st := range codes {
		if st != 503 {
			t.Fatalf("a grab in the burst answered %d, want 503", st)
		}
	}
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "level=ERROR") && strings.Contains(l, "request failed") {
			t.Errorf("an unavailable backend was logged as a failed request: %s", l)
			break
		}
	}
	checkThrottled(t, &logs, "a backend does not answer", burst+1, start, func() {
		req, _ := http.NewRequest("POST", fmt.Sprintf("%s/api/goods/%d/grab", a.URL, g.ID), nil)
		req.Header.Set("Authorization", "Bearer "+other)
		if res, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	})
}

// A client that sends an over-limit body while it waits for the answer (as
// Go's own client does) gets the 413, not a reset: the server drains what was
// declared instead of closing under the client (a socket closed with unread
// bytes is reset, and the reset throws the answer away).
func TestAbuseDoorsOverLimitBodySentWholeGetsTheAnswer(t *testing.T) {
	a := startApp(t)
	body := `{"username":"` + strings.Repeat("a", 200<<10) + `","password":"x"}`
	for i := 0; i < 10; i++ {
		res, err := http.Post(a.URL+"/api/auth/login", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("attempt %d: %v (the connection was cut before the answer)", i, err)
		}
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		wantJSONError(t, "200 KiB body", res, string(raw), 413, "too_large")
	}
}

// A compressed request body is refused before anything inflates it (a small
// gzip can hold gigabytes), and X-Forwarded-Proto from an untrusted peer does
// not make the server believe it was reached over TLS.
func TestAbuseDoorsEncodedBodiesAndForwardedProto(t *testing.T) {
	a := startApp(t)
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write([]byte(`{"username":"` + strings.Repeat("a", 8<<20) + `","password":"x"}`))
	zw.Close()
	req, _ := http.NewRequest("POST", a.URL+"/api/auth/login", bytes.NewReader(zipped.Bytes()))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", "gzip")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	wantJSONError(t, fmt.Sprintf("gzip body of %d bytes inflating to 8 MiB", zipped.Len()), res, string(raw), 400, "invalid")

	req, _ = http.NewRequest("GET", a.URL+"/login", nil)
	req.Header.Set("X-Forwarded-Proto", "https")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if h := res.Header.Get("Strict-Transport-Security"); h != "" {
		t.Fatalf("an untrusted X-Forwarded-Proto got HSTS %q", h)
	}
}

// noRedirect is an HTTP client that hands back redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
