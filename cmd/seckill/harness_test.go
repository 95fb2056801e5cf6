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

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/seckill/seckill/db/coupon"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/fair"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/web/ratelimit"
	"golang.org/x/crypto/bcrypt"
)

// testApp is a whole seckill process started on :0 with a temp database.
type testApp struct {
	*Main
	t   testing.TB
	URL string
	// Clock is the process's clock (Main.Now); advance moves it.
	Clock    *testClock
	browsers []*clockedBrowser // follow Clock (followClock)
	// The areas' services the tests reach past the API (to run a task now,
	// to read what Redis holds).
	Goods   *goods.Service
	Fair    *fair.Service
	Coupons *coupon.Service
}

// testClock is the wall clock moved on by what the test has advanced it.
// A sale window set minutes ahead of it opens when the test advances the
// clock, never by itself while the test's context (a few minutes) lasts.
type testClock struct {
	offset atomic.Int64
	frozen atomic.Int64 // the wall's Unix nanoseconds when frozen (0: it runs)
}

// Now is the wall clock plus the offset (the wall as it was at Freeze, once frozen).
func (c *testClock) Now() time.Time {
	if f := c.frozen.Load(); f != 0 {
		return time.Unix(0, f).Add(time.Duration(c.offset.Load()))
	}
	return time.Now().Add(time.Duration(c.offset.Load()))
}

// Freeze stops the clock: from now on it moves only when the test advances
// it, so a check a second before a boundary holds however long the machine
// takes between steps. For tests with no browser following the clock.
func (c *testClock) Freeze() { c.frozen.Store(time.Now().UnixNano()) }

// Advance moves the clock on by d and returns the new offset from the wall.
func (c *testClock) Advance(d time.Duration) time.Duration {
	return time.Duration(c.offset.Add(int64(d)))
}

// Offset is how far the clock is ahead of the wall.
func (c *testClock) Offset() time.Duration { return time.Duration(c.offset.Load()) }

const testAdminPassword = "admin-password"

// redisFromDBTest marks a configuration whose Redis startApp takes from
// dbtest.RedisURL once the options have run.
const redisFromDBTest = "dbtest:"

// startApp starts a serve-mode process for the test and stops it at cleanup.
// Options change the configuration before it opens.
func startApp(t testing.TB, opts ...func(*Config)) *testApp {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.DBPath = filepath.Join(t.TempDir(), "seckill.db")
	cfg.DatabaseURL = dbtest.DatabaseURL(t) // "" (SQLite at DBPath) unless DATABASE_URL is set
	cfg.RedisURL = redisFromDBTest
	cfg.AdminPassword = testAdminPassword
	cfg.SessionSecret = "test-session-secret-0123456789"
	cfg.FlushInterval = 100 * time.Millisecond
	// Every test's clients share 127.0.0.1, so the abuse limits are off
	// unless a test turns one on (the abuse tests do).
	cfg.RateGrab, cfg.RateAuth, cfg.RateIP = ratelimit.Rate{}, ratelimit.Rate{}, ratelimit.Rate{}
	for _, o := range opts {
		o(&cfg)
	}
	// Asked for only when no option named a Redis: on a Redis Cluster each
	// ask empties the cluster, which would wipe the Redis a second process
	// of the test was told to share.
	if cfg.RedisURL == redisFromDBTest {
		cfg.RedisURL = dbtest.RedisURL(t)
	}
	return startMain(t, cfg, ModeServe)
}

// startMain opens a process of the given mode on cfg; tweaks adjust the
// process's test knobs before it opens.
func startMain(t testing.TB, cfg Config, mode string, tweaks ...func(*Main)) *testApp {
	t.Helper()
	m := NewMain(cfg, mode)
	clock := new(testClock)
	m.Now = clock.Now
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
	dbtest.GuardSlots(t, m.Redis.Client)
	return &testApp{Main: m, t: t, URL: m.URL(), Clock: clock,
		Goods: service[*goods.Service](m, "goods"), Fair: service[*fair.Service](m, "fair"), Coupons: service[*coupon.Service](m, "coupons")}
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
		Code    string            `json:"code"`
		Message string            `json:"message"`
		Fields  map[string]string `json:"fields"`
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

// eventuallyFloor is the least eventually waits before it fails.
const eventuallyFloor = time.Minute

// eventually retries cond until it holds or the deadline passes; for
// asynchronous outcomes (flushes, pushes), never for speed.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	// The bound only keeps a broken test from hanging; it claims nothing of
	// speed (seckill bench measures that). A busy CI machine stretches
	// what takes a second here to many: no wait is shorter than a minute.
	within = max(within, eventuallyFloor)
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// chromiumPath finds Debian's Chromium or another Chrome on PATH, or the
// one CHROMIUM names; CHROMIUM=off finds none, as on a bare machine.
func chromiumPath() string {
	if p := os.Getenv("CHROMIUM"); p == "off" {
		return ""
	} else if p != "" {
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
		if os.Getenv("CHROMIUM") == "off" {
			t.Skip("browser test skipped: CHROMIUM=off")
		}
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
	// The one deadline of a browser test: waits inside it are on events
	// (an element, a text, an enabled button), never on the wall.
	ctx, cancelT := context.WithTimeout(ctx, 2*time.Minute)
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

// browserClockJS makes the page's Date read the wall clock plus an offset in
// milliseconds (%d), before any script of the page runs; evaluated again in
// a page that has it, it only sets the new offset.
const browserClockJS = `(function (offset) {
  if (window.__testClock) { window.__testClock.offset = offset; return; }
  const RealDate = Date, realNow = Date.now.bind(Date);
  const clock = { offset: offset };
  const now = () => realNow() + clock.offset;
  function TestDate(...args) {
    if (!new.target) return new RealDate(now()).toString();
    return Reflect.construct(RealDate, args.length ? args : [now()], new.target);
  }
  Object.setPrototypeOf(TestDate, RealDate); // Date.parse, Date.UTC
  TestDate.prototype = RealDate.prototype;
  TestDate.now = now;
  Object.defineProperty(window, "__testClock", { value: clock });
  window.Date = TestDate;
})(%d);`

// clockedBrowser is a browser tab whose Date follows a testClock.
type clockedBrowser struct {
	ctx    context.Context
	script page.ScriptIdentifier // the clock script every new document runs
}

// set gives the tab's clock the offset, in the current document and in every later one.
func (b *clockedBrowser) set(offset time.Duration) error {
	js := fmt.Sprintf(browserClockJS, offset.Milliseconds())
	return chromedp.Run(b.ctx,
		chromedp.ActionFunc(func(ctx context.Context) error {
			if b.script != "" {
				if err := page.RemoveScriptToEvaluateOnNewDocument(b.script).Do(ctx); err != nil {
					return err
				}
			}
			id, err := page.AddScriptToEvaluateOnNewDocument(js).Do(ctx)
			b.script = id
			return err
		}),
		chromedp.Evaluate(js, nil),
	)
}

// followClock makes the browser's Date read the app's clock from now on, so
// the page's countdowns open a sale when advance moves the server past it.
func (a *testApp) followClock(ctx context.Context) {
	a.t.Helper()
	if a.Clock.frozen.Load() != 0 {
		a.t.Fatal("a browser follows the wall plus an offset: the clock must not be frozen")
	}
	b := &clockedBrowser{ctx: ctx}
	if err := b.set(a.Clock.Offset()); err != nil {
		a.t.Fatalf("browser follows the clock: %v", err)
	}
	a.browsers = append(a.browsers, b)
}

// advance moves the app's clock on by d: first the server's, then that of
// every browser following it, so a page that sees the new time finds the
// server there already.
func (a *testApp) advance(d time.Duration) {
	a.t.Helper()
	offset := a.Clock.Advance(d)
	for _, b := range a.browsers {
		if err := b.set(offset); err != nil {
			a.t.Fatalf("advance the browser's clock: %v", err)
		}
	}
}

// testCrowdClient is an HTTP client for a test's crowd of concurrent requests,
// keeping up to conns connections. It lets go of a connection idle for
// 5 s, before the server's 10 s for a connection's first request (web:
// readTimeout) ends it with a 408: under load the transport dials
// connections it then leaves idle, and one the server timed out would
// answer the next request 408 without reading it.
func testCrowdClient(conns int, timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, IdleConnTimeout: 5 * time.Second}}
}
