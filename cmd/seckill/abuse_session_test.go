package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/seckill/seckill/handlers"
)

// cookieSession is a browser's view of a logged-in session: a cookie jar,
// the token in the session cookie and the CSRF token its pages carry.
type cookieSession struct {
	a      *testApp
	client *http.Client
	token  string
	csrf   string
	userID int64
}

// newCookieSession registers a shopper and logs it in with cookies, as a
// browser does; it returns the session and the password.
func (a *testApp) newCookieSession() (*cookieSession, string, string) {
	a.T.Helper()
	name := fmt.Sprintf("s%d_%d", time.Now().UnixNano()%1e6, userSeq.Add(1))
	if st := a.call("POST", "/api/auth/register", "", map[string]string{"username": name, "password": "password123"}, nil); st != 201 {
		a.T.Fatalf("register %s: %d", name, st)
	}
	return a.cookieLogin(name, "password123"), name, "password123"
}

// cookieLogin logs in through the JSON API with a cookie jar and reads the CSRF token of a page.
func (a *testApp) cookieLogin(username, password string) *cookieSession {
	a.T.Helper()
	s := &cookieSession{a: a, client: browserClient(a.T.(*testing.T))}
	var out authAnswer
	if st := s.do("POST", "/api/auth/login", `{"username":"`+username+`","password":"`+password+`"}`, jsonHeaders, &out); st != 200 {
		a.T.Fatalf("login %s: %d", username, st)
	}
	s.userID = out.User.ID
	u, _ := url.Parse(a.URL)
	for _, c := range s.client.Jar.Cookies(u) {
		if c.Name == handlers.SessionCookie {
			s.token = c.Value
		}
	}
	if s.token == "" {
		a.T.Fatal("login set no session cookie")
	}
	s.csrf = s.pageCSRF()
	return s
}

// pageCSRF reads the CSRF token of the home page as this session sees it.
func (s *cookieSession) pageCSRF() string {
	s.a.T.Helper()
	return pageCSRF(s.a.T, s.client, s.a.URL+"/")
}

var jsonHeaders = map[string]string{"Content-Type": "application/json"}

// do sends a request with the session's cookies and the given headers and
// decodes a JSON answer into out (when not nil); it returns the status.
func (s *cookieSession) do(method, path, body string, headers map[string]string, out any) int {
	s.a.T.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, s.a.URL+path, rd)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := s.client.Do(req)
	if err != nil {
		s.a.T.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			s.a.T.Fatalf("%s %s: %d %q: %v", method, path, res.StatusCode, raw, err)
		}
	}
	return res.StatusCode
}

// withCookie calls GET path carrying only this session cookie token (no jar),
// as a copy of the cookie kept by someone else would.
func (a *testApp) withCookie(token, path string) int {
	a.T.Helper()
	req, _ := http.NewRequest("GET", a.URL+path, nil)
	req.AddCookie(&http.Cookie{Name: handlers.SessionCookie, Value: token})
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.T.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

func TestSessionLogoutEndsBearerAndCookieTokens(t *testing.T) {
	a := startApp(t)

	tok, _ := a.newUser()
	if st := a.call("GET", "/api/me", tok, nil, nil); st != 200 {
		t.Fatalf("before logout: %d", st)
	}
	if st := a.call("POST", "/api/auth/logout", tok, nil, nil); st != 204 {
		t.Fatalf("logout: %d, want 204", st)
	}
	a.wantError("GET", "/api/me", tok, nil, 401, "unauthorized")
	a.wantError("POST", "/api/auth/logout", tok, nil, 401, "unauthorized")

	// The cookie session, logged out through the API: the cookie is cleared
	// and a copy of it no longer works either.
	s, _, _ := a.newCookieSession()
	if st := a.withCookie(s.token, "/api/me"); st != 200 {
		t.Fatalf("cookie before logout: %d", st)
	}
	if st := s.do("POST", "/api/auth/logout", "", map[string]string{"X-CSRF-Token": s.csrf}, nil); st != 204 {
		t.Fatalf("cookie logout: %d, want 204", st)
	}
	if st := s.do("GET", "/api/me", "", nil, nil); st != 401 {
		t.Fatalf("the jar after logout: %d, want 401 (cookie cleared)", st)
	}
	if st := a.withCookie(s.token, "/api/me"); st != 401 {
		t.Fatalf("a copy of the cookie after logout: %d, want 401", st)
	}

	// The HTML logout form does the same.
	s, _, _ = a.newCookieSession()
	res, err := s.client.PostForm(a.URL+"/logout", url.Values{"_csrf": {s.csrf}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 303 {
		t.Fatalf("logout form: %d, want 303", res.StatusCode)
	}
	if st := a.withCookie(s.token, "/api/me"); st != 401 {
		t.Fatalf("a copy of the cookie after the logout form: %d, want 401", st)
	}
}

// startPeer starts a second web process on the same Redis and database.
func startPeer(t *testing.T, a *testApp, opts ...func(*Config)) *testApp {
	t.Helper()
	cfg := a.Config
	cfg.RedisURL = a.Redis.URL
	for _, o := range opts {
		o(&cfg)
	}
	return startMain(t, cfg, ModeWeb)
}

// waitStatus polls GET path as token's bearer until it answers want; a
// revocation travels between processes by pub/sub, so the test waits on it.
func waitStatus(t *testing.T, a *testApp, token, path string, want int, what string) {
	t.Helper()
	eventually(t, 10*time.Second, what, func() bool {
		req, _ := http.NewRequest("GET", a.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == want
	})
}

func TestSessionLogoutReachesOtherProcess(t *testing.T) {
	a := startApp(t)
	b := startPeer(t, a)
	tok, _ := a.newUser()
	if st := b.call("GET", "/api/me", tok, nil, nil); st != 200 { // B now has it in its verified cache
		t.Fatalf("the other process before logout: %d", st)
	}
	if st := a.call("POST", "/api/auth/logout", tok, nil, nil); st != 204 {
		t.Fatalf("logout on A: %d", st)
	}
	waitStatus(t, b, tok, "/api/me", 401, "process B to refuse a token logged out on A")
	// A process started afterwards knows it too, from Redis.
	c := startPeer(t, a)
	c.wantError("GET", "/api/me", tok, nil, 401, "unauthorized")
}

func TestSessionPasswordChangeEndsOtherSessions(t *testing.T) {
	a := startApp(t)
	b := startPeer(t, a)
	s, name, pw := a.newCookieSession()
	tok1 := a.login(name, pw)
	tok2 := a.login(name, pw)
	if st := b.call("GET", "/api/me", tok2, nil, nil); st != 200 {
		t.Fatalf("before: %d", st)
	}
	a.wantError("PUT", "/api/me/password", tok1, map[string]string{"current_password": "wrong-password", "new_password": "new-password-1"}, 401, "unauthorized")
	a.wantError("PUT", "/api/me/password", tok1, map[string]string{"current_password": pw, "new_password": "short"}, 400, "invalid")
	a.wantError("PUT", "/api/me/password", tok1, "{", 400, "invalid")
	if st := a.call("GET", "/api/me", tok2, nil, nil); st != 200 {
		t.Fatalf("a refused change ended a session: %d", st)
	}

	var out authAnswer
	if st := a.call("PUT", "/api/me/password", tok1, map[string]string{"current_password": pw, "new_password": "new-password-1"}, &out); st != 200 || out.Token == "" || out.User.Username != name {
		t.Fatalf("change password: %d %+v", st, out)
	}
	for _, old := range []string{tok1, tok2} {
		a.wantError("GET", "/api/me", old, nil, 401, "unauthorized")
	}
	if st := a.withCookie(s.token, "/api/me"); st != 401 {
		t.Fatalf("the cookie session after a password change: %d, want 401", st)
	}
	waitStatus(t, b, tok2, "/api/me", 401, "process B to refuse a session ended by a password change on A")
	if st := a.call("GET", "/api/me", out.Token, nil, nil); st != 200 {
		t.Fatalf("the fresh token: %d", st)
	}
	if st := b.call("GET", "/api/me", out.Token, nil, nil); st != 200 {
		t.Fatalf("the fresh token on process B: %d", st)
	}
	a.wantError("POST", "/api/auth/login", "", map[string]string{"username": name, "password": pw}, 401, "unauthorized")
	if tok := a.login(name, "new-password-1"); a.call("GET", "/api/me", tok, nil, nil) != 200 {
		t.Fatal("a login with the new password does not work")
	}
}

// Starting a process resets the bootstrap admin's password from the
// configuration; only a reset that changes it ends the admin's sessions.
func TestSessionBootstrapAdminReset(t *testing.T) {
	a := startApp(t)
	admin := a.adminToken()
	startPeer(t, a) // same password: nothing ends
	if st := a.call("GET", "/api/me", admin, nil, nil); st != 200 {
		t.Fatalf("admin token after a restart with the same password: %d", st)
	}
	n, err := a.Redis.Client.HLen(t.Context(), "{revocations}:users").Result()
	if err != nil || n != 0 {
		t.Fatalf("an unchanged admin password revoked sessions: %d %v", n, err)
	}
	startPeer(t, a, func(c *Config) {
		c.AdminPassword = "another-admin-password"
	})
	waitStatus(t, a, admin, "/api/me", 401, "the old admin token to be refused after a password reset")
}

func TestSessionCSRFOnCookieWrites(t *testing.T) {
	a := startApp(t)
	s, name, pw := a.newCookieSession()
	other, _, _ := a.newCookieSession()
	bearer := a.login(name, pw)
	settings := func() string {
		var out struct{ Settings struct{ Email string } }
		if st := a.call("GET", "/api/me/settings", bearer, nil, &out); st != 200 {
			t.Fatalf("settings: %d", st)
		}
		return out.Settings.Email
	}
	const evil = `{"email":"evil@example.com"}`
	for _, h := range []map[string]string{
		{"Content-Type": "text/plain"},
		{"Content-Type": "text/plain", "Origin": "https://evil.example"},
		{"Content-Type": "application/json", "Origin": "https://evil.example"},
		{"Content-Type": "application/json", "Origin": "null"},
		{"Content-Type": "application/json", "X-CSRF-Token": other.csrf}, // another session's token
		{"Content-Type": "application/json", "X-CSRF-Token": "forged"},
	} {
		var e apiError
		if st := s.do("PUT", "/api/me/settings", evil, h, &e); st != 403 || e.Error.Code != "forbidden" {
			t.Errorf("cookie PUT with %v: %d %q, want 403 forbidden", h, st, e.Error.Code)
		}
	}
	if got := settings(); got != "" {
		t.Fatalf("a refused write changed the email to %q", got)
	}

	// A cross-site "simple" post cancelling an order.
	_, g := a.liveGoods(5, 1)
	o := a.grab(bearer, g.ID)
	cancel := fmt.Sprintf("/api/orders/%d/cancel", o.ID)
	if st := s.do("POST", cancel, "", map[string]string{"Content-Type": "text/plain"}, nil); st != 403 {
		t.Fatalf("cross-site cancel: %d, want 403", st)
	}
	if got := a.order(bearer, o.ID).Status; got != "unpaid" {
		t.Fatalf("a refused cancel left the order %q", got)
	}
	if st := s.do("POST", cancel, "", map[string]string{"X-CSRF-Token": s.csrf}, nil); st != 200 {
		t.Fatalf("cancel with the CSRF header: %d", st)
	}

	// The page's token or this site's Origin lets the write through, with a JSON body.
	var e apiError
	if st := s.do("PUT", "/api/me/settings", evil, map[string]string{"Content-Type": "text/plain", "X-CSRF-Token": s.csrf}, &e); st != 400 || e.Error.Code != "invalid" {
		t.Fatalf("CSRF header but a text/plain body: %d %q, want 400 invalid", st, e.Error.Code)
	}
	if st := s.do("PUT", "/api/me/settings", `{"email":"a@example.com"}`, map[string]string{"Content-Type": "application/json; charset=utf-8", "X-CSRF-Token": s.csrf}, nil); st != 200 || settings() != "a@example.com" {
		t.Fatalf("write with the CSRF header: %d, email %q", st, settings())
	}
	if st := s.do("PUT", "/api/me/settings", `{"email":"b@example.com"}`, map[string]string{"Content-Type": "application/json", "Origin": a.URL}, nil); st != 200 || settings() != "b@example.com" {
		t.Fatalf("same-origin write: %d, email %q", st, settings())
	}

	// Bearer requests need no CSRF token, but a body must still be JSON.
	req, _ := http.NewRequest("PUT", a.URL+"/api/me/settings", strings.NewReader(`{"email":"c@example.com"}`))
	req.Header.Set("Authorization", "Bearer "+bearer)
	req.Header.Set("Content-Type", "text/plain")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 400 || settings() != "b@example.com" {
		t.Fatalf("bearer write with a text/plain body: %d, email %q", res.StatusCode, settings())
	}
	if st := a.call("PUT", "/api/me/settings", bearer, map[string]string{"email": "d@example.com"}, nil); st != 200 || settings() != "d@example.com" {
		t.Fatalf("bearer JSON write: %d", st)
	}
}

func TestSessionLoginNextStaysOnSite(t *testing.T) {
	a := startApp(t)
	_, name, pw := a.newCookieSession()
	for _, tc := range []struct{ next, want string }{
		{"/goods/1?x=1", "/goods/1?x=1"},
		{"/me/orders", "/me/orders"},
		{"/\t/evil.example/", "/"},
		{"/\\evil.example", "/"},
		{"//evil.example", "/"},
		{"https://evil.example/", "/"},
		{"javascript:alert(1)", "/"},
		{"/\r\n/evil.example", "/"},
	} {
		c := browserClient(t)
		token := pageCSRF(t, c, a.URL+"/login")
		res, err := c.PostForm(a.URL+"/login", url.Values{"_csrf": {token}, "username": {name}, "password": {pw}, "next": {tc.next}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 303 || res.Header.Get("Location") != tc.want {
			t.Errorf("next=%q: %d → %q, want 303 → %q", tc.next, res.StatusCode, res.Header.Get("Location"), tc.want)
		}
	}
}

// A live socket outlives the request that opened it, so it is held to the
// same sessions: a logout closes it (1008, "session ended") on every process.
func TestSessionLogoutClosesLiveSockets(t *testing.T) {
	a := startApp(t)
	peer := startPeer(t, a)
	token, _ := a.newUser()
	other, _ := a.newUser()
	dial := func(base, tok string) *websocket.Conn {
		c, _, err := websocket.DefaultDialer.Dial(strings.Replace(base, "http", "ws", 1)+"/ws?token="+tok, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	here, there, bystander := dial(a.URL, token), dial(peer.URL, token), dial(a.URL, other)
	if st := a.call("POST", "/api/auth/logout", token, nil, nil); st != 204 {
		t.Fatalf("logout: %d", st)
	}
	for name, c := range map[string]*websocket.Conn{"same process": here, "other process": there} {
		c.SetReadDeadline(time.Now().Add(20 * time.Second)) // a bound on a hang, not a latency target
		var err error
		for err == nil {
			_, _, err = c.ReadMessage()
		}
		if !websocket.IsCloseError(err, websocket.ClosePolicyViolation) {
			t.Fatalf("%s: socket of the ended session: %v, want close 1008", name, err)
		}
	}
	// Another user's socket stays open: it still answers a subscribe.
	bystander.WriteJSON(map[string]string{"op": "subscribe", "topic": "goods:1"})
	bystander.SetReadDeadline(time.Now().Add(20 * time.Second))
	var ack map[string]any
	if err := bystander.ReadJSON(&ack); err != nil || ack["type"] != "subscribed" {
		t.Fatalf("another user's socket: %v %v", ack, err)
	}
}
