package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/web/ratelimit"
)

// A process on a host whose clock is an hour fast still judges sale windows
// and order deadlines by the same time as every other process: its clock is
// set by Redis's. (An hour, so that no slowness of the machine can make the
// checks below pass or fail by the wall clock.)
func TestClockOffIsSetByRedis(t *testing.T) {
	server := dbtest.StartServer(t) // a Redis with a clock of its own (the embedded one shares the process's)
	fast := func() time.Time { return time.Now().Add(time.Hour) }
	a := startMain(t, func() Config {
		c := DefaultConfig()
		c.Addr, c.DBPath, c.RedisURL = "127.0.0.1:0", t.TempDir()+"/seckill.db", "redis://"+server.Addr
		c.AdminPassword, c.SessionSecret = testAdminPassword, "test-session-secret-0123456789"
		c.RateGrab, c.RateAuth, c.RateIP = ratelimit.Rate{}, ratelimit.Rate{}, ratelimit.Rate{}
		return c
	}(), ModeServe, func(m *Main) { m.Now, m.SystemClock = fast, fast })
	if d := a.Main.Clock.Skew(); d > -59*time.Minute || d < -61*time.Minute {
		t.Fatalf("the process's clock is set back by %v, want about an hour", -d)
	}
	merchant, _ := a.newMerchant()
	shopper, _ := a.newUser()
	now := time.Now() // the right time; the process's host says an hour later
	slot := func(start time.Duration) int64 {
		var out struct{ Slot slotJSON }
		body := map[string]string{"title": "Later", "start_at": now.Add(start).Format(time.RFC3339Nano), "end_at": now.Add(start + 2*time.Hour).Format(time.RFC3339Nano)}
		if st := a.call("POST", "/api/admin/slots", merchant, body, &out); st != http.StatusCreated {
			t.Fatalf("create slot: %d", st)
		}
		return out.Slot.ID
	}
	// A sale that opens in 30 minutes has not started, though the host's clock is past it.
	later := a.createGoods(merchant, slot(30*time.Minute), 5, 1)
	a.wantError("POST", fmt.Sprintf("/api/goods/%d/grab", later.ID), shopper, nil, http.StatusConflict, "not_started")
	// An order's deadline is the order TTL from the right time.
	open := a.createGoods(merchant, slot(-time.Minute), 5, 1)
	o := a.grab(shopper, open.ID)
	if want := time.Now().Add(a.Config.OrderTTL); o.ExpiresAt.Sub(want).Abs() > 10*time.Minute {
		t.Fatalf("order expires at %v, want about %v (the order TTL from the right time)", o.ExpiresAt, want)
	}
}
