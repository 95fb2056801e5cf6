package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/tasks"
)

type switchesJSON struct {
	SalePaused       bool `json:"sale_paused"`
	LiveCharts       bool `json:"live_charts"`
	StockPushMS      int  `json:"stock_push_ms"`
	PowFloorBits     int  `json:"pow_floor_bits"`
	RemindersPaused  bool `json:"reminders_paused"`
	MerchantReadOnly bool `json:"merchant_read_only"`
}

var defaultSwitchesJSON = switchesJSON{LiveCharts: true, StockPushMS: model.DefaultStockPushMS}

// switches reads GET /api/admin/switches as the bearer of token.
func (a *testApp) switches(token string) switchesJSON {
	a.T.Helper()
	var out struct{ Switches switchesJSON }
	if st := a.call("GET", "/api/admin/switches", token, nil, &out); st != 200 {
		a.T.Fatalf("GET /api/admin/switches: %d", st)
	}
	return out.Switches
}

// setSwitches PUTs a change and fails unless it is taken.
func (a *testApp) setSwitches(token string, change map[string]any) switchesJSON {
	a.T.Helper()
	var out struct{ Switches switchesJSON }
	if st := a.call("PUT", "/api/admin/switches", token, change, &out); st != 200 {
		a.T.Fatalf("PUT /api/admin/switches %v: %d", change, st)
	}
	return out.Switches
}

// post sends a POST with a bearer token and returns the status, the error code and the Retry-After header.
func (a *testApp) post(path, token string, body any) (int, string, string) {
	a.T.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest("POST", a.URL+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.T.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var e apiError
	json.Unmarshal(raw, &e)
	return res.StatusCode, e.Error.Code, res.Header.Get("Retry-After")
}

// A change on one web process is in force on another sharing the store
// and Redis (waited on, within a generous bound), audited with what
// changed; bad input changes nothing; merchants cannot read or flip the
// switches; a new process on the same store starts with them.
func TestSwitchesSharedAcrossProcessesAndRestarts(t *testing.T) {
	a := startApp(t)
	cfg := a.Config
	cfg.RedisURL = a.Redis.URL
	b := startMain(t, cfg, ModeWeb)
	admin := a.adminToken()
	// A limit no wait can use up: grabs before b has the new floor succeed.
	merchant, g := a.liveGoods(100, 100)
	shopper, _ := a.newUser()
	rp := a.createRedPacket(merchant, map[string]any{"title": "Lucky", "total_cents": 1000, "count": 10, "mode": "fixed"})
	cp := a.couponTemplate(merchant, "amount_off", 100, 0, 7)
	_, queued := a.queueGoods(10, 10, time.Minute, nil)

	if got := b.switches(admin); got != defaultSwitchesJSON {
		t.Fatalf("fresh switches %+v, want %+v", got, defaultSwitchesJSON)
	}
	a.wantError("GET", "/api/admin/switches", merchant, nil, 403, "forbidden")
	a.wantError("PUT", "/api/admin/switches", merchant, map[string]any{"sale_paused": true}, 403, "forbidden")
	a.wantError("PUT", "/api/admin/switches", shopper, map[string]any{"sale_paused": true}, 403, "forbidden")
	for _, bad := range []any{
		map[string]any{"sale_paused": true, "stock_push_ms": 5},
		map[string]any{"stock_push_ms": model.StockPushMS.Max + 1},
		map[string]any{"pow_floor_bits": 25, "live_charts": false},
		map[string]any{"pow_floor_bits": -1},
		map[string]any{"sale_paused": "yes"},
		"not json",
	} {
		a.wantError("PUT", "/api/admin/switches", admin, bad, 400, "invalid")
	}
	if got := a.switches(admin); got != defaultSwitchesJSON {
		t.Fatalf("after refused changes %+v, want %+v", got, defaultSwitchesJSON)
	}

	// Pause the sale on a: b refuses every grab once it has reloaded.
	want := defaultSwitchesJSON
	want.SalePaused = true
	if got := a.setSwitches(admin, map[string]any{"sale_paused": true}); got != want {
		t.Fatalf("PUT answered %+v, want %+v", got, want)
	}
	goodsGrab := fmt.Sprintf("/api/goods/%d/grab", g.ID)
	eventually(t, 20*time.Second, "process b to refuse grabs while the sale is paused", func() bool {
		st, _, _ := b.post(goodsGrab, shopper, nil)
		return st == 503
	})
	for _, path := range []string{goodsGrab, fmt.Sprintf("/api/redpackets/%d/grab", rp.ID), fmt.Sprintf("/api/coupons/%d/grab", cp.ID)} {
		for _, p := range []*testApp{a, b} {
			if st, code, retry := p.post(path, shopper, nil); st != 503 || code != "unavailable" || retry == "" {
				t.Fatalf("POST %s while paused: %d %q, Retry-After %q; want 503 unavailable with Retry-After", path, st, code, retry)
			}
		}
	}
	// Places in a waiting room are kept: joins and tickets still work.
	if st, code, _ := b.joinQueue(shopper, queued.ID, ""); st != 201 {
		t.Fatalf("join the waiting room while paused: %d %q", st, code)
	}
	if st, code, _ := b.queueRequest("GET", shopper, queued.ID, ""); st != 200 {
		t.Fatalf("ticket while paused: %d %q", st, code)
	}
	e := findAudit(t, a.auditLog(admin, ""), "switches.update", "switches")
	if e.Detail != `{"sale_paused":"false → true"}` {
		t.Fatalf("audit detail %s, want the sale_paused change", e.Detail)
	}

	// Resume, with a proof-of-work floor and a slower push: goods that asks
	// for no proof asks for one on b, and b's live pushes slow down.
	want.SalePaused, want.PowFloorBits, want.StockPushMS = false, 4, 400
	if got := a.setSwitches(admin, map[string]any{"sale_paused": false, "pow_floor_bits": 4, "stock_push_ms": 400}); got != want {
		t.Fatalf("PUT answered %+v, want %+v", got, want)
	}
	eventually(t, 20*time.Second, "process b to ask a proof of work of goods without one", func() bool {
		st, code := b.grabWith(shopper, g.ID, "")
		return st == 403 && code == "pow_required"
	})
	if c := b.powChallenge(shopper, g.ID); c.level() < 4 {
		t.Fatalf("challenge %+v below the floor of 4", c)
	}
	b.wantGrab(shopper, g.ID, solve(t, b.powChallenge(shopper, g.ID)), 201, "")
	eventually(t, 20*time.Second, "process b to push live stock every 400 ms", func() bool {
		return b.Backend.Events.Window() == 400*time.Millisecond
	})

	// A new process on the same store starts with the switches as set.
	b.Close()
	c := startMain(t, cfg, ModeWeb)
	if got := c.switches(admin); got != want {
		t.Fatalf("after a restart %+v, want %+v", got, want)
	}
	if w := c.Backend.Events.Window(); w != 400*time.Millisecond {
		t.Fatalf("restarted process pushes every %v, want 400ms", w)
	}
	c.wantGrab(shopper, g.ID, "", 403, "pow_required")
}

// While merchants are read-only, a merchant's change through the admin API
// or a merchant page's form is refused 403 with a reason, an admin's is
// not; the merchant pages say so in a banner. Lifting it lets them again.
func TestSwitchesMerchantReadOnly(t *testing.T) {
	a := startApp(t)
	admin := a.adminToken()
	name := fmt.Sprintf("ro%d", userSeq.Add(1))
	if st := a.call("POST", "/api/admin/users", admin, map[string]string{"username": name, "password": "password123", "role": "merchant"}, nil); st != 201 {
		t.Fatalf("create merchant: %d", st)
	}
	merchant := a.login(name, "password123")
	pages := a.cookieLogin(name, "password123")
	a.setSwitches(admin, map[string]any{"merchant_read_only": true})

	slot := map[string]any{"title": "Morning", "start_at": a.Clock.Now().Add(time.Hour).Format(time.RFC3339), "end_at": a.Clock.Now().Add(2 * time.Hour).Format(time.RFC3339)}
	var e apiError
	if st := a.call("POST", "/api/admin/slots", merchant, slot, &e); st != 403 || e.Error.Code != "forbidden" || !strings.Contains(e.Error.Message, "read-only") {
		t.Fatalf("merchant's change while read-only: %d %+v", st, e)
	}
	if st := a.call("GET", "/api/admin/slots", merchant, nil, nil); st != 200 {
		t.Fatalf("merchant's read while read-only: %d", st)
	}
	if st, _ := pages.postForm("/admin/slots", url.Values{"title": {"Morning"}}); st != 403 {
		t.Fatalf("merchant's form while read-only: %d, want 403", st)
	}
	if st := a.call("POST", "/api/admin/slots", admin, slot, nil); st != 201 {
		t.Fatalf("admin's change while merchants are read-only: %d", st)
	}
	_, body := a.getPage(merchant, "/admin")
	if !strings.Contains(body, `data-testid="switches-banner"`) || !strings.Contains(body, "Merchants are read-only") {
		t.Fatal("the dashboard shows no banner while merchants are read-only")
	}

	a.setSwitches(admin, map[string]any{"merchant_read_only": false})
	if st := a.call("POST", "/api/admin/slots", merchant, slot, nil); st != 201 {
		t.Fatalf("merchant's change once lifted: %d", st)
	}
	if _, body := a.getPage(merchant, "/admin"); strings.Contains(body, `data-testid="switches-banner"`) {
		t.Fatal("the banner stays with every switch at its default")
	}
}

// With live charts off the worker takes no samples and the merchant pages
// say the charts are off; back on, samples come again.
func TestSwitchesLiveChartsOff(t *testing.T) {
	a := startApp(t)
	admin := a.adminToken()
	merchant, g := a.liveGoods(10, 5)
	shopper, _ := a.newUser()
	a.grab(shopper, g.ID)
	samples := func() int {
		var out struct{ Samples []json.RawMessage }
		if st := a.call("GET", fmt.Sprintf("/api/admin/goods/%d/samples", g.ID), merchant, nil, &out); st != 200 {
			t.Fatalf("samples: %d", st)
		}
		return len(out.Samples)
	}
	eventually(t, 20*time.Second, "a first sample", func() bool { return samples() > 0 })

	a.setSwitches(admin, map[string]any{"live_charts": false})
	var sampleStep func(context.Context) error
	for _, ar := range a.Areas {
		if ar.Name == "goods" {
			sampleStep = ar.AfterFlush
		}
	}
	// The worker's own flushes (every 100 ms) run the same step: a sample
	// of this second may still be on its way, none after it.
	if err := sampleStep(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := samples()
	for range 3 {
		a.advance(2 * time.Second) // a new second each time: a sample would be taken
		if err := sampleStep(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if got := samples(); got != n {
		t.Fatalf("%d samples taken with live charts off", got-n)
	}
	_, body := a.getPage(merchant, fmt.Sprintf("/admin/goods/%d", g.ID))
	if !strings.Contains(body, `data-testid="goods-chart-off"`) || strings.Contains(body, `data-chart="goods"`) {
		t.Fatal("the goods page does not say its live chart is off")
	}
	if _, body := a.getPage(merchant, "/admin"); !strings.Contains(body, "Live charts are off") {
		t.Fatal("the dashboard does not say live charts are off")
	}

	a.setSwitches(admin, map[string]any{"live_charts": true})
	a.advance(2 * time.Second)
	if err := sampleStep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := samples(); got <= n {
		t.Fatal("no sample once live charts are back on")
	}
	if _, body := a.getPage(merchant, fmt.Sprintf("/admin/goods/%d", g.ID)); !strings.Contains(body, `data-chart="goods"`) {
		t.Fatal("the goods page draws no chart once live charts are back on")
	}
}

// A reminder due while reminders are held waits, its retries unspent, and
// goes out once they resume.
func TestSwitchesRemindersHeld(t *testing.T) {
	a := startApp(t)
	admin := a.adminToken()
	merchant, _ := a.newMerchant()
	alice, _ := a.newUser()
	sl := a.createSlot(merchant, 40*time.Minute, time.Hour)
	g := a.createGoods(merchant, sl.ID, 10, 1)
	a.goodsRemind("PUT", alice, g.ID, 10, "app")
	info := a.goodsRemindTask(g.ID, sl.StartAt, 10)
	if info == nil {
		t.Fatal("no reminder task")
	}
	a.setSwitches(admin, map[string]any{"reminders_paused": true})
	a.advance(sl.StartAt.Add(-10 * time.Minute).Sub(a.Clock.Now()))
	if err := a.Backend.Queue.RunTask(tasks.GoodsRemindQueue, info.ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the reminder task to be held for a retry", func() bool {
		ti, err := a.Backend.Queue.GetTaskInfo(tasks.GoodsRemindQueue, info.ID)
		return err == nil && ti.State.String() == "retry" && strings.Contains(ti.LastErr, tasks.ErrHeld.Error())
	})
	ti, _ := a.Backend.Queue.GetTaskInfo(tasks.GoodsRemindQueue, info.ID)
	if ti.Retried != 0 {
		t.Fatalf("a held reminder spent %d retries", ti.Retried)
	}
	inbox := func() int {
		var out struct{ Notifications []json.RawMessage }
		a.call("GET", "/api/me/notifications", alice, nil, &out)
		return len(out.Notifications)
	}
	if n := inbox(); n != 0 {
		t.Fatalf("%d notifications sent while reminders are held", n)
	}

	a.setSwitches(admin, map[string]any{"reminders_paused": false})
	a.Backend.Queue.RunTask(tasks.GoodsRemindQueue, info.ID) // now rather than at its retry (which may have come already)
	eventually(t, 20*time.Second, "the held reminder to go out", func() bool { return inbox() == 1 })
}

// TestSwitchesBrowser: an admin finds the switches from the dashboard,
// pauses the sale with the form, and every merchant page then carries the
// banner; a bad number is refused beside its field, changing nothing.
func TestSwitchesBrowser(t *testing.T) {
	a := startApp(t)
	ctx := newBrowser(t)
	browse(t, ctx, "log in", browserLogin(ctx, a.URL, a.Config.AdminUsername, testAdminPassword))
	var banner string
	browse(t, ctx, "pause the sale from the switches page",
		chromedp.Navigate(a.URL+"/admin"),
		chromedp.Click(`[data-testid=switches-link]`),
		chromedp.WaitVisible(`[data-testid=switches-form]`),
		chromedp.Click(`[data-testid=input-sale_paused]`),
		chromedp.Click(`[data-testid=switches-submit]`),
		chromedp.WaitVisible(`[data-testid=switches-banner]`),
		chromedp.Navigate(a.URL+"/admin"),
		chromedp.Text(`[data-testid=switches-banner]`, &banner),
	)
	if !strings.Contains(banner, "The sale is paused") {
		t.Fatalf("banner %q", banner)
	}
	want := defaultSwitchesJSON
	want.SalePaused = true
	if got := a.switches(a.adminToken()); got != want {
		t.Fatalf("after the form %+v, want %+v", got, want)
	}
	var fieldErr string
	browse(t, ctx, "a push interval out of bounds",
		chromedp.Navigate(a.URL+"/admin/switches"),
		chromedp.SetValue(`[data-testid=input-stock_push_ms]`, "1"),
		chromedp.Click(`[data-testid=input-sale_paused]`), // unpaused, in the same refused form
		chromedp.Click(`[data-testid=switches-submit]`),
		chromedp.WaitVisible(`[data-testid=error-stock_push_ms]:not(:empty)`),
		chromedp.Text(`[data-testid=error-stock_push_ms]`, &fieldErr),
	)
	if !strings.Contains(fieldErr, "20 to 5000") {
		t.Fatalf("field error %q", fieldErr)
	}
	if got := a.switches(a.adminToken()); got != want {
		t.Fatalf("after a refused form %+v, want %+v", got, want)
	}
}

// A floor raised mid-sale is asked of the next grab of goods that asked
// for no proof, on the process that raised it, although the fair stage
// passes such goods by while their settings hold (goods.Quiet): the
// switches' change tells it. The clock stands still, so no mark runs out
// meanwhile.
func TestFloorRaisedAskedOfTheNextGrab(t *testing.T) {
	a := startApp(t)
	admin := a.adminToken()
	plain := a.fairGoods(0, false, -time.Minute)
	first, _ := a.newUser()
	second, _ := a.newUser()
	a.Clock.Freeze()
	a.wantGrab(first, plain.ID, "", 201, "")
	a.setSwitches(admin, map[string]any{"pow_floor_bits": 4})
	a.wantGrab(second, plain.ID, "", 403, "pow_required")
	a.setSwitches(admin, map[string]any{"pow_floor_bits": 0})
	a.wantGrab(second, plain.ID, "", 201, "")
}
