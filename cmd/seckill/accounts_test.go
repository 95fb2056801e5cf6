package main

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/db/account"
	"github.com/seckill/seckill/db/model"
)

func TestAccountsOverHTTP(t *testing.T) {
	a := startApp(t)

	var reg authAnswer
	if st := a.call("POST", "/api/auth/register", "", map[string]string{"username": "alice_1", "password": "password123"}, &reg); st != 201 {
		t.Fatalf("register: %d", st)
	}
	if reg.Token == "" || reg.User.ID == 0 || reg.User.Username != "alice_1" || reg.User.Role != "user" {
		t.Fatalf("register answer %+v", reg)
	}
	a.wantError("POST", "/api/auth/register", "", map[string]string{"username": "ALICE_1", "password": "password123"}, 409, "conflict")
	for _, bad := range []map[string]string{
		{"username": "ab", "password": "password123"},
		{"username": strings.Repeat("a", 33), "password": "password123"},
		{"username": "bad name", "password": "password123"},
		{"username": "bob_ok", "password": "short"},
		{"username": "bob_ok", "password": strings.Repeat("p", 73)},
	} {
		a.wantError("POST", "/api/auth/register", "", bad, 400, "invalid")
	}
	a.wantError("POST", "/api/auth/register", "", "{not json", 400, "invalid")
	a.wantError("POST", "/api/auth/register", "", `{"username": 5}`, 400, "invalid")
	var n int
	a.SQL.R.QueryRow(`SELECT COUNT(*) FROM users WHERE username = 'bob_ok'`).Scan(&n)
	if n != 0 {
		t.Fatal("a refused registration created a user")
	}

	tok := a.login("alice_1", "password123")
	a.wantError("POST", "/api/auth/login", "", map[string]string{"username": "alice_1", "password": "wrong-password"}, 401, "unauthorized")
	a.wantError("POST", "/api/auth/login", "", map[string]string{"username": "nobody", "password": "password123"}, 401, "unauthorized")

	var me authAnswer
	if st := a.call("GET", "/api/me", tok, nil, &me); st != 200 || me.User.ID != reg.User.ID {
		t.Fatalf("me: %d %+v", st, me)
	}
	a.wantError("GET", "/api/me", "", nil, 401, "unauthorized")
	a.wantError("GET", "/api/me", tok[:len(tok)-3]+"xyz", nil, 401, "unauthorized")
	signer := account.NewTokens([]byte(a.Config.SessionSecret), time.Hour)
	expired := signer.SignClaims(model.Claims{UserID: reg.User.ID, Username: "alice_1", Role: "user", Expires: time.Now().Add(-time.Minute).Unix()})
	a.wantError("GET", "/api/me", expired, nil, 401, "unauthorized")
	forged := account.NewTokens([]byte("some-other-secret-123456"), time.Hour).SignClaims(model.Claims{UserID: reg.User.ID, Role: "admin", Expires: time.Now().Add(time.Hour).Unix()})
	a.wantError("GET", "/api/me", forged, nil, 401, "unauthorized")

	// Roles: a user may not use the admin API; an admin-made merchant can log in and may.
	a.wantError("POST", "/api/admin/users", tok, map[string]string{"username": "m_1", "password": "password123", "role": "merchant"}, 403, "forbidden")
	admin := a.adminToken()
	a.wantError("POST", "/api/admin/users", admin, map[string]string{"username": "m_1", "password": "password123", "role": "boss"}, 400, "invalid")
	var made authAnswer
	if st := a.call("POST", "/api/admin/users", admin, map[string]string{"username": "m_1", "password": "password123", "role": "merchant"}, &made); st != 201 || made.User.Role != "merchant" {
		t.Fatalf("admin creates merchant: %d %+v", st, made)
	}
	mtok := a.login("m_1", "password123")
	a.wantError("POST", "/api/admin/users", mtok, map[string]string{"username": "m_2", "password": "password123", "role": "admin"}, 403, "forbidden")
	if st := a.call("GET", "/api/me", mtok, nil, &me); st != 200 || me.User.Role != "merchant" {
		t.Fatalf("merchant me: %d %+v", st, me)
	}
	a.wantError("GET", "/api/no/such/thing", tok, nil, 404, "not_found")
}

func TestSettings(t *testing.T) {
	a := startApp(t)
	tok, _ := a.newUser()
	type settings struct {
		Settings struct {
			Email      string `json:"email"`
			WebhookURL string `json:"webhook_url"`
		} `json:"settings"`
	}
	var s settings
	if st := a.call("PUT", "/api/me/settings", tok, map[string]string{"email": "a@example.com", "webhook_url": "https://93.184.215.14/hook"}, &s); st != 200 || s.Settings.Email != "a@example.com" || s.Settings.WebhookURL != "https://93.184.215.14/hook" {
		t.Fatalf("set: %d %+v", st, s)
	}
	// A field left out is unchanged.
	if st := a.call("PUT", "/api/me/settings", tok, map[string]string{"email": "b@example.com"}, &s); st != 200 || s.Settings.WebhookURL != "https://93.184.215.14/hook" || s.Settings.Email != "b@example.com" {
		t.Fatalf("partial: %d %+v", st, s)
	}
	for _, bad := range []map[string]string{
		{"email": "not-an-address"},
		{"webhook_url": "ftp://example.com/x"},
		{"webhook_url": "http://127.0.0.1:9/hook"},
		{"webhook_url": "http://10.1.2.3/hook"},
		{"webhook_url": "http://localhost/hook"},
	} {
		a.wantError("PUT", "/api/me/settings", tok, bad, 400, "invalid")
	}
	// An empty string clears.
	if st := a.call("PUT", "/api/me/settings", tok, map[string]string{"webhook_url": ""}, &s); st != 200 || s.Settings.WebhookURL != "" || s.Settings.Email != "b@example.com" {
		t.Fatalf("clear: %d %+v", st, s)
	}
	a.wantError("PUT", "/api/me/settings", "", map[string]string{"email": "x@example.com"}, 401, "unauthorized")

	private := startApp(t, func(c *Config) { c.WebhookAllowPrivate = true })
	ptok, _ := private.newUser()
	if st := private.call("PUT", "/api/me/settings", ptok, map[string]string{"webhook_url": "http://127.0.0.1:9/hook"}, &s); st != 200 {
		t.Fatalf("WEBHOOK_ALLOW_PRIVATE: %d", st)
	}
}

var csrfMeta = regexp.MustCompile(`name="csrf-token" content="([^"]+)"`)

// pageCSRF loads the page at url with client and returns the CSRF token its forms carry.
func pageCSRF(t testing.TB, client *http.Client, url string) string {
	t.Helper()
	res, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := csrfMeta.FindSubmatch(page)
	if m == nil {
		t.Fatalf("%s carries no CSRF token", url)
	}
	return string(m[1])
}

// browserClient is an HTTP client with cookies that does not follow redirects.
func browserClient(t *testing.T) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func TestLoginFormNeedsCSRF(t *testing.T) {
	a := startApp(t)
	c := browserClient(t)
	form := url.Values{"username": {"admin"}, "password": {testAdminPassword}}

	res, err := c.PostForm(a.URL+"/login", form)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 403 {
		t.Fatalf("form post without CSRF token: %d, want 403", res.StatusCode)
	}
	form.Set("_csrf", "forged-token")
	res, _ = c.PostForm(a.URL+"/login", form)
	res.Body.Close()
	if res.StatusCode != 403 {
		t.Fatalf("form post with a wrong CSRF token: %d, want 403", res.StatusCode)
	}

	token := pageCSRF(t, c, a.URL+"/login")
	form.Set("_csrf", token)
	res, _ = c.PostForm(a.URL+"/login", form)
	res.Body.Close()
	if res.StatusCode != 303 || res.Header.Get("Location") != "/admin" {
		t.Fatalf("login with CSRF token: %d → %q, want 303 → /admin", res.StatusCode, res.Header.Get("Location"))
	}
	res, _ = c.Get(a.URL + "/admin")
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), `data-testid="monitor-link"`) {
		t.Fatalf("dashboard after login: %d", res.StatusCode)
	}
}

func TestMonitorIsForAdmins(t *testing.T) {
	a := startApp(t)
	user, _ := a.newUser()
	merchant, _ := a.newMerchant()
	get := func(token string) *http.Response {
		req, _ := http.NewRequest("GET", a.URL+"/monitor/", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := browserClient(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	if res := get(user); res.StatusCode != 403 {
		t.Fatalf("user: %d, want 403", res.StatusCode)
	}
	if res := get(merchant); res.StatusCode != 403 {
		t.Fatalf("merchant: %d, want 403", res.StatusCode)
	}
	if res := get(""); res.StatusCode != 303 || !strings.HasPrefix(res.Header.Get("Location"), "/login") {
		t.Fatalf("anonymous: %d → %q, want a redirect to the login page", res.StatusCode, res.Header.Get("Location"))
	}
	if res := get(a.adminToken()); res.StatusCode != 200 {
		t.Fatalf("admin: %d, want 200", res.StatusCode)
	}
}

// Each request is answered as its own token's bearer, however many bearers
// share the server's reused connection buffers: the verified-token cache
// must key on a copy of the token, never on bytes the next request overwrites.
func TestTokenIdentityUnderConcurrentBearers(t *testing.T) {
	a := startApp(t)
	users, err := a.Accounts.SeedUsers(context.Background(), "bearer_", "password123", 64)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var wrong atomic.Int64
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				u := users[(g*31+i*7)%len(users)]
				var me authAnswer
				if st := a.call("GET", "/api/me", a.Tokens.Sign(u), nil, &me); st != 200 || me.User.ID != u.ID {
					wrong.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if n := wrong.Load(); n > 0 {
		t.Fatalf("%d of 1600 requests were not answered as their own bearer", n)
	}
}
