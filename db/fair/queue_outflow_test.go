package fair_test

import (
	"testing"
	"time"

	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/model"
)

// autoRoom makes goods with an automatic outflow (queue_rate 0) and, at
// its start, users 1..n joined in order (so user u has place u).
func (e *goodsEnv) autoRoom(n int64) *model.Goods {
	e.T.Helper()
	g := e.queueGoods(1_000_000, 0, time.Minute)
	e.Clk.Advance(time.Minute)
	if err := e.F.JoinQueueBulk(e.Ctx, g.ID, 1, n, e.Clk.Now()); err != nil {
		e.T.Fatal(err)
	}
	e.tick(nil)
	return g
}

// grabAdmitted has user u grab with their admission.
func (e *goodsEnv) grabAdmitted(u, goodsID int64) {
	e.T.Helper()
	tk := e.ticket(u, goodsID)
	if tk.State != model.TicketAdmitted {
		e.T.Fatalf("user %d is not admitted: %+v", u, tk)
	}
	if _, err := e.GrabWith(u, goodsID, goods.Pass{Admission: tk.Admission}); err != nil {
		e.T.Fatalf("user %d grab: %v", u, err)
	}
}

// An automatic outflow pauses within 2 s (of the injected clock) once the
// grabs answer slowly (latency injected into the grab path), lets nobody in
// while paused, resumes once the slow grabs have left the window, and no
// ticket is lost or moved: user u keeps place u, and exactly the first A
// are admitted.
// The operator's sale pause (the steering switches) pauses an automatic
// room: nobody is let in while grabs are refused, every place is kept, and
// it admits again once the sale resumes.
func TestQueueAutoOutflowFollowsSalePause(t *testing.T) {
	e := newGoodsEnv(t)
	g := e.autoRoom(500)
	var paused bool
	e.F.SalePaused = func() bool { return paused }
	for range 4 {
		e.Clk.Advance(250 * time.Millisecond)
		e.tick(nil)
	}
	before := e.queueStats(g.ID)
	if before.Paused || before.Admitted == 0 {
		t.Fatalf("before the pause: %+v, want some let in", before)
	}
	paused = true
	e.Clk.Advance(time.Second)
	e.tick(nil)
	at := e.queueStats(g.ID)
	for range 8 {
		e.Clk.Advance(500 * time.Millisecond)
		e.tick(nil)
	}
	if st := e.queueStats(g.ID); !st.Paused || st.RateNow != 0 || st.Admitted != at.Admitted || st.Joined != before.Joined {
		t.Fatalf("sale paused: %+v, want paused at %d admitted with every place kept", st, at.Admitted)
	}
	paused = false
	for range 4 {
		e.Clk.Advance(time.Second)
		e.tick(nil)
	}
	if st := e.queueStats(g.ID); st.Paused || st.Admitted <= at.Admitted {
		t.Fatalf("sale resumed: %+v, want admitting again past %d", st, at.Admitted)
	}
}

func TestQueueAutoOutflowPausesAndRecovers(t *testing.T) {
	e := newGoodsEnv(t)
	const users = 3000
	g := e.autoRoom(users)
	next := int64(1) // the next admitted user to grab
	step := func(grabs int) {
		t.Helper()
		for range grabs {
			e.grabAdmitted(next, g.ID)
			next++
		}
		e.tick(nil)
	}

	// Healthy: in at the target (the fallback, nothing measured yet), 100 a second.
	for range 8 {
		e.Clk.Advance(250 * time.Millisecond)
		step(5)
	}
	st := e.queueStats(g.ID)
	if st.Paused || st.RateNow != 100 || st.Admitted != 200 {
		t.Fatalf("healthy: %+v, want 200 admitted at 100 a second", st)
	}
	if n := e.F.PausedRooms(); n != 0 {
		t.Fatalf("healthy: %d rooms paused by the metric's count", n)
	}

	// The grabs answer in 300 ms: paused within 2 s.
	e.F.SetGrabHook(func() { e.Clk.Advance(300 * time.Millisecond) })
	slowFrom := e.Clk.Now()
	for !e.queueStats(g.ID).Paused {
		if e.Clk.Now().Sub(slowFrom) > 2*time.Second {
			t.Fatalf("still letting in %v after the grabs turned slow: %+v", e.Clk.Now().Sub(slowFrom), e.queueStats(g.ID))
		}
		step(1)
	}
	pausedAt := e.queueStats(g.ID).Admitted
	for range 10 { // still slow: nobody more let in
		e.Clk.Advance(200 * time.Millisecond)
		step(1)
	}
	lastSlow := e.Clk.Now()
	if st := e.queueStats(g.ID); !st.Paused || st.RateNow != 0 || st.Admitted != pausedAt {
		t.Fatalf("paused: %+v, want %d admitted still", st, pausedAt)
	}
	if n := e.F.PausedRooms(); n != 1 {
		t.Fatalf("paused: the metric counts %d rooms paused, want 1", n)
	}

	// Fast again: resumed once the slow grabs left the window, and rising.
	e.F.SetGrabHook(nil)
	for e.queueStats(g.ID).Paused {
		if e.Clk.Now().Sub(lastSlow) > 12*time.Second {
			t.Fatalf("still paused %v after the last slow grab: %+v", e.Clk.Now().Sub(lastSlow), e.queueStats(g.ID))
		}
		e.Clk.Advance(250 * time.Millisecond)
		step(1)
	}
	for range 8 {
		e.Clk.Advance(250 * time.Millisecond)
		step(1)
	}
	st = e.queueStats(g.ID)
	if st.Paused || st.Admitted <= pausedAt || st.RateNow < 20 {
		t.Fatalf("recovered: %+v, want letting in again past %d", st, pausedAt)
	}
	if n := e.F.PausedRooms(); n != 0 {
		t.Fatalf("recovered: the metric counts %d rooms paused, want 0", n)
	}

	// Every place kept, the admitted exactly the first A.
	for u := int64(1); u <= users; u++ {
		tk := e.ticket(u, g.ID)
		admitted := u <= st.Admitted
		if tk.Place != u || (tk.State == model.TicketAdmitted) != admitted || tk.State == model.TicketClosed {
			t.Fatalf("user %d: %+v, want place %d, admitted %v (%d admitted)", u, tk, u, admitted, st.Admitted)
		}
	}
}

// An admission that runs out unused is a no-show: counted exactly, and the
// automatic outflow lets more in for the share that do not come, so the
// ETAs shorten. The merchant's counters read the flows.
func TestQueueNoShowsAndCounters(t *testing.T) {
	e := newGoodsEnv(t)
	const users = 20000
	g := e.autoRoom(users)
	e.Clk.Advance(time.Second)
	e.tick(nil)
	for u := int64(1); u <= 40; u++ {
		e.grabAdmitted(u, g.ID)
	}
	st := e.queueStats(g.ID)
	if st.Admitted != 100 || st.NoShows != 0 || st.InflowPerS != users/10 || st.OutflowPerS != 10 || st.RateNow != 100 {
		t.Fatalf("a second in: %+v, want 100 admitted, %d/s in and 10/s out over 10 s", st, users/10)
	}
	last := e.ticket(users, g.ID)
	if want := (last.Position + 99) / 100; last.ETASeconds != want {
		t.Fatalf("the last in line: %+v, want an ETA of %d s at 100 a second", last, want)
	}
	for range 61 { // the first second's admissions run out; 40 of 100 were used
		e.Clk.Advance(time.Second)
		e.tick(nil)
	}
	st = e.queueStats(g.ID)
	// By now − 60 s the first two seconds' 200 were admitted: 40 used.
	if st.NoShows != 160 {
		t.Fatalf("no-shows %d, want 160 (%+v)", st.NoShows, st)
	}
	if st.RateNow != 200 || st.Paused {
		t.Fatalf("with most admissions unused the rate is %d, want 200 (×2 at most): %+v", st.RateNow, st)
	}
	tk := e.ticket(users, g.ID)
	if want := (tk.Position + 199) / 200; tk.ETASeconds != want {
		t.Fatalf("the last in line: %+v, want an ETA of %d s at 200 a second", tk, want)
	}
	if st.ExpectedWaitS != (st.Waiting+199)/200 || st.InflowPerS != 0 || st.OutflowPerS < 100 || st.OutflowPerS > 200 {
		t.Fatalf("counters %+v", st)
	}
	if st.ActualWaitP50S < 10 || st.ActualWaitP50S > 62 {
		t.Fatalf("the median wait %v s, want between the first and the last admission's", st.ActualWaitP50S)
	}
}
