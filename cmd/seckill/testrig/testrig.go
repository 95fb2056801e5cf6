// Package testrig starts whole seckill processes for tests, as a shopper,
// a merchant and an operator meet them: over HTTP, on a port of their own,
// with a temporary database and the Redis dbtest gives (embedded, or the
// REDIS_URL the run names), and a clock the test moves. Any package's
// tests may use it (an external test package: package x_test), as
// cmd/seckill's end-to-end tests do.
//
//	a := testrig.Start(t)
//	shopper, _ := a.NewUser()
//	var o map[string]any
//	status := a.Call("POST", "/api/goods/1/grab", shopper, nil, &o)
package testrig

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/cmd/seckill/app"
	"github.com/seckill/seckill/db/coupon"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/fair"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/web/ratelimit"
	"golang.org/x/crypto/bcrypt"
)

// App is a whole seckill process started on :0 with a temporary database.
type App struct {
	*app.Main
	T   testing.TB
	URL string
	// Clock is the process's clock (Main.Now); the test moves it.
	Clock *Clock
	// The areas' services the tests reach past the API (to run a task now,
	// to read what Redis holds).
	Goods   *goods.Service
	Fair    *fair.Service
	Coupons *coupon.Service
}

// Clock is the wall clock moved on by what the test has advanced it.
// A sale window set minutes ahead of it opens when the test advances the
// clock, never by itself while the test's context (a few minutes) lasts.
type Clock struct {
	st atomic.Pointer[clockState] // nil: the wall, running
}

// clockState is the clock's offset from the wall and whether it stands.
type clockState struct {
	offset time.Duration
	frozen int64 // the wall's Unix nanoseconds when it stopped (0: it runs)
}

func (c *Clock) state() clockState {
	if s := c.st.Load(); s != nil {
		return *s
	}
	return clockState{}
}

// change moves the clock from one state to the next by f, as one step.
func (c *Clock) change(f func(clockState) clockState) clockState {
	for {
		old := c.st.Load()
		var s clockState
		if old != nil {
			s = *old
		}
		next := f(s)
		if c.st.CompareAndSwap(old, &next) {
			return next
		}
	}
}

// Now is the wall clock plus the offset (the wall as it was when it stopped, while it stands).
func (c *Clock) Now() time.Time {
	s := c.state()
	if s.frozen != 0 {
		return time.Unix(0, s.frozen).Add(s.offset)
	}
	return time.Now().Add(s.offset)
}

// Freeze stops the clock: from now on it moves only when the test advances
// it, so a check a second before a boundary holds however long the machine
// takes between steps. For tests with no browser following the clock.
func (c *Clock) Freeze() {
	c.change(func(s clockState) clockState {
		if s.frozen == 0 {
			s.frozen = time.Now().UnixNano()
		}
		return s
	})
}

// Frozen reports whether Freeze stopped the clock.
func (c *Clock) Frozen() bool { return c.state().frozen != 0 }

// Hold stops a running clock until the func it returns is called, and
// from there lets it run on from where it stood: the time between is
// the test's own (a shopper's proof of work solved on a busy machine),
// never the process's. Holding a frozen clock changes nothing.
func (c *Clock) Hold() (resume func()) {
	held := false
	c.change(func(s clockState) clockState {
		held = s.frozen == 0
		if held {
			s.frozen = time.Now().UnixNano()
		}
		return s
	})
	if !held {
		return func() {}
	}
	return func() {
		c.change(func(s clockState) clockState {
			if s.frozen != 0 {
				s.offset -= time.Duration(time.Now().UnixNano() - s.frozen)
				s.frozen = 0
			}
			return s
		})
	}
}

// Advance moves the clock on by d and returns the new offset from the wall.
func (c *Clock) Advance(d time.Duration) time.Duration {
	return c.change(func(s clockState) clockState { s.offset += d; return s }).offset
}

// Offset is how far the clock is ahead of the wall.
func (c *Clock) Offset() time.Duration { return c.state().offset }

// AdminPassword is the bootstrap admin's password in every process Start opens.
const AdminPassword = "admin-password"

// redisFromDBTest marks a configuration whose Redis Start takes from
// dbtest.RedisURL once the options have run.
const redisFromDBTest = "dbtest:"

// Config is the configuration Start opens a process on before its options
// run: on 127.0.0.1:0, SQLite in a temporary folder (PostgreSQL when
// DATABASE_URL is set: dbtest.DatabaseURL), a fixed admin password and
// session secret, a fast flush, and the abuse limits off (every test's
// clients share 127.0.0.1; the abuse tests turn them on).
func Config(t testing.TB) app.Config {
	cfg := app.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.DBPath = filepath.Join(t.TempDir(), "seckill.db")
	cfg.DatabaseURL = dbtest.DatabaseURL(t) // "" (SQLite at DBPath) unless DATABASE_URL is set
	cfg.RedisURL = redisFromDBTest
	cfg.AdminPassword = AdminPassword
	cfg.SessionSecret = "test-session-secret-0123456789"
	cfg.FlushInterval = 100 * time.Millisecond
	cfg.RateGrab, cfg.RateAuth, cfg.RateIP = ratelimit.Rate{}, ratelimit.Rate{}, ratelimit.Rate{}
	return cfg
}

// Start starts a serve-mode process (web, worker and scheduler) for the
// test and stops it at cleanup. Options change Config before it opens.
func Start(t testing.TB, opts ...func(*app.Config)) *App {
	t.Helper()
	cfg := Config(t)
	for _, o := range opts {
		o(&cfg)
	}
	// Asked for only when no option named a Redis: on a Redis Cluster each
	// ask empties the cluster, which would wipe the Redis a second process
	// of the test was told to share.
	if cfg.RedisURL == redisFromDBTest {
		cfg.RedisURL = dbtest.RedisURL(t)
	}
	return StartMain(t, cfg, app.ModeServe)
}

// StartMain opens a process of the given mode on cfg; tweaks adjust the
// process's test knobs before it opens.
func StartMain(t testing.TB, cfg app.Config, mode string, tweaks ...func(*app.Main)) *App {
	t.Helper()
	m := app.NewMain(cfg, mode)
	clock := new(Clock)
	m.Now = clock.Now
	m.BcryptCost = bcrypt.MinCost
	m.MaxConnsPerIP, m.MaxAnonSocketsPerIP = 0, 0 // every test connects from 127.0.0.1; abuse tests turn them on
	if !testing.Verbose() {
		m.Log = app.DiscardLogger()
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
	return &App{Main: m, T: t, URL: m.URL(), Clock: clock,
		Goods:   app.AreaService[*goods.Service](m, "goods"),
		Fair:    app.AreaService[*fair.Service](m, "fair"),
		Coupons: app.AreaService[*coupon.Service](m, "coupons")}
}

// Call sends a JSON request (body: nil, a string sent as it is, or a value
// encoded) with the token ("": none) and decodes the JSON answer into out
// (when not nil); it returns the status.
func (a *App) Call(method, path, token string, body, out any) int {
	a.T.Helper()
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
		a.T.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.T.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			a.T.Fatalf("%s %s: %d %q is not JSON: %v", method, path, res.StatusCode, raw, err)
		}
	}
	return res.StatusCode
}

// APIError is the contract's error body.
type APIError struct {
	Error struct {
		Code    string            `json:"code"`
		Message string            `json:"message"`
		Fields  map[string]string `json:"fields"`
	} `json:"error"`
}

// WantError calls the API and fails unless it answers status with the code.
func (a *App) WantError(method, path, token string, body any, status int, code string) {
	a.T.Helper()
	var e APIError
	if got := a.Call(method, path, token, body, &e); got != status || e.Error.Code != code {
		a.T.Fatalf("%s %s: got %d %q (%s), want %d %q", method, path, got, e.Error.Code, e.Error.Message, status, code)
	}
}

// AuthAnswer is the answer of a sign-up or a sign-in.
type AuthAnswer struct {
	User struct {
		ID       int64  `json:"id"`
		Username string `json:"username"`
		Role     string `json:"role"`
	} `json:"user"`
	Token string `json:"token"`
}

// seq makes the accounts' names unique in the test binary.
var seq atomic.Int64

// Name is a name no other account of the test binary has, after prefix.
func Name(prefix string) string {
	return fmt.Sprintf("%s%d_%d", prefix, time.Now().UnixNano()%1e6, seq.Add(1))
}

// NewUser registers a fresh shopper and returns its token and ID.
func (a *App) NewUser() (token string, id int64) {
	a.T.Helper()
	name := Name("u")
	var out AuthAnswer
	if st := a.Call("POST", "/api/auth/register", "", map[string]string{"username": name, "password": "password123"}, &out); st != 201 {
		a.T.Fatalf("register %s: %d", name, st)
	}
	return out.Token, out.User.ID
}

// Login returns a token for the account.
func (a *App) Login(username, password string) string {
	a.T.Helper()
	var out AuthAnswer
	if st := a.Call("POST", "/api/auth/login", "", map[string]string{"username": username, "password": password}, &out); st != 200 {
		a.T.Fatalf("login %s: %d", username, st)
	}
	return out.Token
}

// AdminToken signs in as the bootstrap admin.
func (a *App) AdminToken() string { return a.Login(a.Config.AdminUsername, AdminPassword) }

// NewMerchant has the admin create a merchant and returns its token and ID.
func (a *App) NewMerchant() (token string, id int64) {
	a.T.Helper()
	name := Name("m")
	var out AuthAnswer
	if st := a.Call("POST", "/api/admin/users", a.AdminToken(), map[string]string{"username": name, "password": "password123", "role": "merchant"}, &out); st != 201 {
		a.T.Fatalf("create merchant: %d", st)
	}
	return a.Login(name, "password123"), out.User.ID
}

// NewSale has the merchant (token) put goods of stock units, limit a
// shopper, on sale now: in a slot that opened a minute ago by the
// process's clock and lasts an hour. It returns the goods' ID.
func (a *App) NewSale(token string, stock, limit int64) int64 {
	a.T.Helper()
	now := a.Clock.Now().UTC()
	var slot struct{ Slot struct{ ID int64 } }
	if st := a.Call("POST", "/api/admin/slots", token, map[string]string{"title": Name("slot"),
		"start_at": now.Add(-time.Minute).Format(time.RFC3339Nano), "end_at": now.Add(time.Hour).Format(time.RFC3339Nano)}, &slot); st != 201 {
		a.T.Fatalf("create slot: %d", st)
	}
	var g struct{ Goods struct{ ID int64 } }
	if st := a.Call("POST", "/api/admin/goods", token, map[string]any{"slot_id": slot.Slot.ID, "title": Name("goods"), "description": "on sale",
		"price_cents": 10000, "seckill_price_cents": 2500, "stock": stock, "limit_per_user": limit}, &g); st != 201 {
		a.T.Fatalf("create goods: %d", st)
	}
	return g.Goods.ID
}
