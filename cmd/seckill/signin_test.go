package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/web/ratelimit"
)

// postAuthForm posts a sign-in or sign-up form from a fresh cookie client: status,
// Retry-After, Location and body.
func postAuthForm(t *testing.T, a *testApp, path string, form url.Values) (int, string, string, string) {
	t.Helper()
	c := browserClient(t)
	form.Set("_csrf", pageCSRF(t, c, a.URL+path))
	res, err := c.PostForm(a.URL+path, form)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Retry-After"), res.Header.Get("Location"), string(b)
}

var lockoutSeconds = regexp.MustCompile(`data-testid="lockout" data-lockout="(\d+)"`)

// The 5th wrong password locks the account: the sign-in form says so on
// itself with the seconds to wait (from Retry-After), keeps the name typed,
// and is no bare error page; the JSON API keeps its 429 contract.
func TestSigninLockoutOnForm(t *testing.T) {
	a := startApp(t)
	name, _ := a.register("lock")
	wrong := url.Values{"username": {name}, "password": {"wrong-password"}, "next": {"/goods/1"}}
	for i := 1; i <= 4; i++ {
		if st, _, _, body := postAuthForm(t, a, "/login", wrong); st != 401 || !strings.Contains(body, `data-testid="form-error"`) || strings.Contains(body, `data-testid="lockout"`) {
			t.Fatalf("wrong password %d: %d", i, st)
		}
	}
	for _, pw := range []string{"wrong-password", "password123"} { // the 5th failure locks; while locked even the right one waits
		form := url.Values{"username": {name}, "password": {pw}, "next": {"/goods/1"}}
		st, retry, _, body := postAuthForm(t, a, "/login", form)
		m := lockoutSeconds.FindStringSubmatch(body)
		secs, _ := strconv.Atoi(retry)
		if st != 429 || secs < 1 || m == nil || m[1] != retry {
			t.Fatalf("locked sign-in (%s): %d, Retry-After %q, lockout on the form %v:\n%s", pw, st, retry, m, body)
		}
		for _, want := range []string{`data-testid="login-form"`, `value="` + name + `"`, `name="next" value="/goods/1"`} {
			if !strings.Contains(body, want) {
				t.Fatalf("the locked form lacks %s", want)
			}
		}
		if strings.Contains(body, `data-testid="error-page"`) {
			t.Fatal("a lockout shows the error page")
		}
	}
	var out struct {
		Error struct{ Code string } `json:"error"`
	}
	req, _ := http.NewRequest("POST", a.URL+"/api/auth/login", strings.NewReader(`{"username":"`+name+`","password":"password123"}`))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 429 || res.Header.Get("Retry-After") == "" || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("API login while locked: %d %q %s", res.StatusCode, res.Header.Get("Content-Type"), raw)
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.Error.Code != "rate_limited" {
		t.Fatalf("API login while locked: %s", raw)
	}
}

// The per-address limit on sign-in and sign-up forms (RATE_AUTH) is shown on
// the form too, with its wait.
func TestSigninRateLimitOnForm(t *testing.T) {
	a := startApp(t, func(c *Config) { c.RateAuth = ratelimit.Rate{N: 2, Per: time.Minute} })
	form := url.Values{"username": {"nobody_here"}, "password": {"wrong-password"}}
	for i := 0; i < 2; i++ {
		postAuthForm(t, a, "/login", form)
	}
	for _, path := range []string{"/login", "/register"} {
		st, retry, _, body := postAuthForm(t, a, path, form)
		if st != 429 || retry == "" || lockoutSeconds.FindStringSubmatch(body) == nil || !strings.Contains(body, `value="nobody_here"`) {
			t.Fatalf("%s over the limit: %d Retry-After %q:\n%s", path, st, retry, body)
		}
	}
}

// "Create an account" from a login that came from "Log in to grab" keeps
// next, sign-up lands there; a next that would leave the site lands home.
func TestSigninNextThroughSignUp(t *testing.T) {
	a := startApp(t)
	_, g := a.liveGoods(5, 1)
	item := fmt.Sprintf("/goods/%d", g.ID)
	st, page := a.getPage("", item)
	if st != 200 || !strings.Contains(page, `href="/login?next=`+item+`"`) {
		t.Fatalf("the goods page has no Log in to grab with next: %d", st)
	}
	_, login := a.getPage("", "/login?next="+url.QueryEscape(item))
	link := `href="/register?next=` + url.QueryEscape(item) + `"`
	if !strings.Contains(login, link) {
		t.Fatalf("the login form's Create an account drops next (want %s)", link)
	}
	_, register := a.getPage("", "/register?next="+url.QueryEscape(item))
	if !strings.Contains(register, `name="next" value="`+item+`"`) || !strings.Contains(register, `href="/login?next=`+url.QueryEscape(item)+`"`) {
		t.Fatal("the sign-up form does not carry next")
	}
	for i, tc := range []struct{ next, want string }{
		{item, item},
		{"/\\evil.example", "/"},
		{"//evil.example", "/"},
		{"https://evil.example/", "/"},
		{"/\t/evil.example/", "/"},
		{"javascript:alert(1)", "/"},
	} {
		name := fmt.Sprintf("next%d_%d", i, userSeq.Add(1))
		st, _, loc, _ := postAuthForm(t, a, "/register", url.Values{"username": {name}, "password": {"password123"}, "next": {tc.next}})
		if st != 303 || loc != tc.want {
			t.Errorf("sign-up with next=%q: %d → %q, want 303 → %q", tc.next, st, loc, tc.want)
		}
		_, page := a.getPage("", "/register?next="+url.QueryEscape(tc.next))
		if tc.want == "/" && strings.Contains(page, "evil.example") {
			t.Errorf("the sign-up form carries next=%q", tc.next)
		}
	}
}

// Settings changes the password: a wrong current one is refused beside the
// form, in red, and ends nothing; the right one ends every other session
// (their tokens answer 401) while this browser carries on.
func TestSigninPasswordChangeInSettings(t *testing.T) {
	a := startApp(t)
	s, name, pw := a.newCookieSession()
	other := a.login(name, pw)
	oldCookie := s.token
	if st, body, _ := s.page("/settings"); st != 200 || !strings.Contains(body, `data-testid="password-form"`) {
		t.Fatalf("settings: %d, no password form", st)
	}
	if st, loc := s.postForm("/settings/password", url.Values{"current_password": {"wrong-password"}, "new_password": {"new-password-1"}}); st != 303 || loc != "/settings#password" {
		t.Fatalf("wrong current password: %d → %q", st, loc)
	}
	_, body, _ := s.page("/settings")
	if kind, text, ok := flashAt(body, "password"); !ok || kind != "error" || !strings.Contains(text, "current password is wrong") {
		t.Fatalf("wrong current password beside the form: %v %q %q", ok, kind, text)
	}
	if st := a.call("GET", "/api/me", other, nil, nil); st != 200 {
		t.Fatalf("a refused change ended another session: %d", st)
	}
	if st, loc := s.postForm("/settings/password", url.Values{"current_password": {pw}, "new_password": {"new-password-1"}}); st != 303 || loc != "/settings#password" {
		t.Fatalf("change: %d → %q", st, loc)
	}
	a.wantError("GET", "/api/me", other, nil, 401, "unauthorized")
	if st := a.withCookie(oldCookie, "/api/me"); st != 401 {
		t.Fatalf("the old cookie after the change: %d, want 401", st)
	}
	st, body, _ := s.page("/settings")
	if kind, _, ok := flashAt(body, "password"); st != 200 || !ok || kind != "success" {
		t.Fatalf("this browser after the change: %d, answer %v %q", st, ok, kind)
	}
	if tok := a.login(name, "new-password-1"); tok == "" {
		t.Fatal("no login with the new password")
	}
}
