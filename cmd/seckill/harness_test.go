package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/web/ratelimit"
	"golang.org/x/crypto/bcrypt"
)

// testApp is a whole seckill process started on :0 with a temp database.
type testApp struct {
	*Main
	t   testing.TB
	URL string
}

const testAdminPassword = "admin-password"

// startApp starts a serve-mode process for the test and stops it at cleanup.
// Options change the configuration before it opens.
func startApp(t testing.TB, opts ...func(*Config)) *testApp {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.DBPath = filepath.Join(t.TempDir(), "seckill.db")
	cfg.RedisURL = dbtest.RedisURL(t)
	cfg.AdminPassword = testAdminPassword
	cfg.SessionSecret = "test-session-secret-0123456789"
	cfg.FlushInterval = 100 * time.Millisecond
	// Every test's clients share 127.0.0.1, so the abuse limits are off
	// unless a test turns one on (the abuse tests do).
	cfg.RateGrab, cfg.RateAuth, cfg.RateIP = ratelimit.Rate{}, ratelimit.Rate{}, ratelimit.Rate{}
	for _, o := range opts {
		o(&cfg)
	}
	return startMain(t, cfg, ModeServe)
}

// startMain opens a process of the given mode on cfg; tweaks adjust the
// process's test knobs before it opens.
func startMain(t testing.TB, cfg Config, mode string, tweaks ...func(*Main)) *testApp {
	t.Helper()
	m := NewMain(cfg, mode)
	m.BcryptCost = bcrypt.MinCost
	m.MaxConnsPerIP, m.MaxAnonSocketsPerIP = 0, 0 // every test connects from 127.0.0.1; abuse tests turn them on
	if !testing.Verbose() {
		m.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	for _, tw := range tweaks { // after the logger, so a tweak may capture the log
		tw(m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Open(ctx); err != nil {
		m.Close()
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return &testApp{Main: m, t: t, URL: m.URL()}
}

var userSeq atomic.Int64

// call sends a JSON request and decodes the JSON answer into out (when not nil); it returns the status.
func (a *testApp) call(method, path, token string, body, out any) int {
	a.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(b)
	default:
		buf, _ := json.Marshal(b)
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, a.URL+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			a.t.Fatalf("%s %s: %d %q is not JSON: %v", method, path, res.StatusCode, raw, err)
		}
	}
	return res.StatusCode
}

// apiError is the contract's error body.
type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// wantError calls the API and fails unless it answers status with the code.
func (a *testApp) wantError(method, path, token string, body any, status int, code string) {
	a.t.Helper()
	var e apiError
	if got := a.call(method, path, token, body, &e); got != status || e.Error.Code != code {
		a.t.Fatalf("%s %s: got %d %q (%s), want %d %q", method, path, got, e.Error.Code, e.Error.Message, status, code)
	}
}

type authAnswer struct {
	User struct {
		ID       int64  `json:"id"`
		Username string `json:"username"`
		Role     string `json:"role"`
	} `json:"user"`
	Token string `json:"token"`
}

// newUser registers a fresh shopper and returns its token and ID.
func (a *testApp) newUser() (token string, id int64) {
	a.t.Helper()
	name := fmt.Sprintf("u%d_%d", time.Now().UnixNano()%1e6, userSeq.Add(1))
	var out authAnswer
	if st := a.call("POST", "/api/auth/register", "", map[string]string{"username": name, "password": "password123"}, &out); st != 201 {
		a.t.Fatalf("register %s: %d", name, st)
	}
	return out.Token, out.User.ID
}

// login returns a token for the account.
func (a *testApp) login(username, password string) string {
	a.t.Helper()
	var out authAnswer
	if st := a.call("POST", "/api/auth/login", "", map[string]string{"username": username, "password": password}, &out); st != 200 {
		a.t.Fatalf("login %s: %d", username, st)
	}
	return out.Token
}

// adminToken logs in as the bootstrap admin.
func (a *testApp) adminToken() string { return a.login(a.Config.AdminUsername, testAdminPassword) }

// newMerchant has the admin create a merchant and returns its token and ID.
func (a *testApp) newMerchant() (token string, id int64) {
	a.t.Helper()
	name := fmt.Sprintf("m%d_%d", time.Now().UnixNano()%1e6, userSeq.Add(1))
	var out authAnswer
	if st := a.call("POST", "/api/admin/users", a.adminToken(), map[string]string{"username": name, "password": "password123", "role": "merchant"}, &out); st != 201 {
		a.t.Fatalf("create merchant: %d", st)
	}
	return a.login(name, "password123"), out.User.ID
}

// eventually retries cond until it holds or the deadline passes; for
// asynchronous outcomes (flushes, pushes), never for speed.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// chromiumPath finds Debian's Chromium or another Chrome on PATH.
func chromiumPath() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// newBrowser starts headless Chromium for the test, or skips it with a clear message when there is none.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		t.Skip("browser test skipped: no Chromium found (apt-get install chromium, or set CHROMIUM); .ci/run installs it")
	}
	// Chromium may still be writing its profile as it exits, so the folder is
	// removed on a best-effort basis rather than with t.TempDir.
	profile, err := os.MkdirTemp("", "seckill-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() {
		chromedp.Cancel(ctx)
		cancelT()
		cancelC()
		cancelA()
		os.RemoveAll(profile)
	})
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("start chromium %s: %v", path, err)
	}
	return ctx
}

// browserLogin logs in through the login form.
func browserLogin(ctx context.Context, base, username, password string) chromedp.Tasks {
	return chromedp.Tasks{
		chromedp.Navigate(base + "/login"),
		chromedp.WaitVisible(`[data-testid=login-form]`),
		chromedp.SendKeys(`[data-testid=login-username]`, username),
		chromedp.SendKeys(`[data-testid=login-password]`, password),
		chromedp.Click(`[data-testid=login-submit]`),
		chromedp.WaitVisible(`[data-testid=whoami]`),
	}
}
