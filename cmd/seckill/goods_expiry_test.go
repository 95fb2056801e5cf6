package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/tasks"
)

// lastExpiryTick is when the latest expiry tick Asynq keeps finished, and its result.
func (a *testApp) lastExpiryTick() (time.Time, string) {
	a.T.Helper()
	infos, err := a.Inspector.ListCompletedTasks(tasks.QueueOrderExpire)
	if err != nil {
		return time.Time{}, ""
	}
	var last time.Time
	var result string
	for _, ti := range infos {
		if ti.Type == tasks.TypeOrderExpireDue && ti.CompletedAt.After(last) {
			last, result = ti.CompletedAt, string(ti.Result)
		}
	}
	return last, result
}

// The periodic expiry runs on the process's clock: an order outlives ticks
// before its deadline and expires at the first tick after the test moves the
// clock past it, with its unit back in stock; Asynqmon's record of the tick
// says how many it expired.
func TestExpiryTickFollowsTheClock(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	_, g := a.liveGoods(1, 1)
	ut, _ := a.newUser()
	o := a.grab(ut, g.ID)
	a.Clock.Advance(time.Until(o.ExpiresAt) - 5*time.Second) // 5 s before the deadline, on the server's clock
	since := time.Now()
	eventually(t, 10*time.Second, "two expiry ticks after moving the clock", func() bool {
		last, _ := a.lastExpiryTick()
		return last.After(since.Add(time.Second))
	})
	if got := a.order(ut, o.ID); got.Status != "unpaid" {
		t.Fatalf("order %s before its deadline", got.Status)
	}
	a.Clock.Advance(10 * time.Second)
	eventually(t, 10*time.Second, "the order to expire", func() bool { return a.order(ut, o.ID).Status == "expired" })
	if left := a.goods(g.ID).Remaining; left != 1 {
		t.Fatalf("remaining %d after the expiry, want the unit back (1)", left)
	}
	eventually(t, 10*time.Second, "Asynq to keep the tick that expired it", func() bool {
		infos, _ := a.Inspector.ListCompletedTasks(tasks.QueueOrderExpire)
		for _, ti := range infos {
			if ti.Type == tasks.TypeOrderExpireDue && strings.Contains(string(ti.Result), "expired 1 orders") {
				return true
			}
		}
		return false
	})
	a.wantError("POST", fmt.Sprintf("/api/orders/%d/pay", o.ID), ut, nil, 409, "expired")
}
