package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/seckill/seckill/cmd/seckill/testrig"
)

// testApp is a whole seckill process started on :0 with a temp database
// (testrig.App), and the browsers that follow its clock.
type testApp struct {
	*testrig.App
	browsers []*clockedBrowser // follow Clock (followClock)
}

const testAdminPassword = testrig.AdminPassword

type (
	apiError   = testrig.APIError
	authAnswer = testrig.AuthAnswer
)

// startApp starts a serve-mode process for the test and stops it at cleanup.
// Options change the configuration before it opens.
func startApp(t testing.TB, opts ...func(*Config)) *testApp {
	t.Helper()
	return &testApp{App: testrig.Start(t, opts...)}
}

// startMain opens a process of the given mode on cfg; tweaks adjust the
// process's test knobs before it opens.
func startMain(t testing.TB, cfg Config, mode string, tweaks ...func(*Main)) *testApp {
	t.Helper()
	return &testApp{App: testrig.StartMain(t, cfg, mode, tweaks...)}
}

var userSeq atomic.Int64

// The rig's calls, by the names this package's tests have always used.
func (a *testApp) call(method, path, token string, body, out any) int {
	a.T.Helper()
	return a.Call(method, path, token, body, out)
}

func (a *testApp) wantError(method, path, token string, body any, status int, code string) {
	a.T.Helper()
	a.WantError(method, path, token, body, status, code)
}

func (a *testApp) newUser() (token string, id int64) { a.T.Helper(); return a.NewUser() }
func (a *testApp) login(username, password string) string {
	a.T.Helper()
	return a.Login(username, password)
}
func (a *testApp) adminToken() string                    { a.T.Helper(); return a.AdminToken() }
func (a *testApp) newMerchant() (token string, id int64) { a.T.Helper(); return a.NewMerchant() }

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
	a.T.Helper()
	if a.Clock.Frozen() {
		a.T.Fatal("a browser follows the wall plus an offset: the clock must not be frozen")
	}
	b := &clockedBrowser{ctx: ctx}
	if err := b.set(a.Clock.Offset()); err != nil {
		a.T.Fatalf("browser follows the clock: %v", err)
	}
	a.browsers = append(a.browsers, b)
}

// advance moves the app's clock on by d: first the server's, then that of
// every browser following it, so a page that sees the new time finds the
// server there already.
func (a *testApp) advance(d time.Duration) {
	a.T.Helper()
	offset := a.Clock.Advance(d)
	for _, b := range a.browsers {
		if err := b.set(offset); err != nil {
			a.T.Fatalf("advance the browser's clock: %v", err)
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
