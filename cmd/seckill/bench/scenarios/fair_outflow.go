package scenarios

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill/cmd/seckill/bench"
)

// The waiting room's automatic outflow under a slow backend: every account
// of the scenario joins a room with queue_rate 0 before its start; after
// it, each reads its ticket and, once admitted, grabs once. From
// outflowSlowFrom to outflowSlowTo after the start every grab is made
// 300 ms slower (the in-process server's grab hook), as a struggling store
// or Redis would answer; the bench samples the room's counters
// (GET /api/admin/goods/{id}/queue) twice a second and reports the
// admissions over time: the room should slow down to a pause while the
// grabs are slow, then recover, with every place kept.
const (
	outflowSlowFrom = 3 * time.Second
	outflowSlowTo   = 9 * time.Second
	outflowLatency  = 300 * time.Millisecond
	outflowFor      = 40 * time.Second
)

// outflowSample is one reading of the room's counters.
type outflowSample struct {
	at       time.Duration // since the start
	slow     bool          // latency injected at the time
	admitted int64
	rateNow  int64
	paused   bool
}

// outflowResult is the phase's outcome.
type outflowResult struct {
	unavailable string // why it did not run
	samples     []outflowSample
	joined      int64
	grabsOK     int64
}

// outflowStats is the part of the room's counters the phase reads.
type outflowStats struct {
	Queue struct {
		Joined   int64 `json:"joined"`
		Admitted int64 `json:"admitted"`
		RateNow  int64 `json:"rate_now"`
		Paused   bool  `json:"paused"`
	} `json:"queue"`
}

// outflowPhase runs the phase (in-process servers only: the latency is
// injected into the server's grab path).
func (f *fairBench) outflowPhase(ctx context.Context) (*outflowResult, error) {
	res := &outflowResult{}
	if f.t.Fair == nil {
		res.unavailable = "not measured: a remote server's grab path cannot be slowed from here"
		return res, nil
	}
	s := FairSale{Label: "automatic outflow", Mode: "queue"}
	start := time.Now().Add(5 * time.Second)
	slot, err := f.t.benchSlot("fair outflow", start.UTC().Truncate(time.Millisecond), start.Add(time.Hour).UTC().Truncate(time.Second))
	if err != nil {
		return nil, err
	}
	body := map[string]any{"slot_id": slot, "title": "fair " + s.Label, "description": "fair-sale bench", "price_cents": 9900,
		"seckill_price_cents": 990, "stock": 2 * len(f.shoppers), "limit_per_user": 1, "mode": "queue", "queue_rate": 0, "admission_seconds": 60}
	var g goodsView
	if code := f.t.benchCall("POST", "/api/admin/goods", f.t.admin, body, &g); code != "ok" {
		return nil, fmt.Errorf("create the outflow goods: %s", code)
	}
	id := g.Goods.ID
	var slow atomic.Bool
	f.t.Fair.SetGrabHook(func() {
		if slow.Load() {
			time.Sleep(outflowLatency)
		}
	})
	defer f.t.Fair.SetGrabHook(nil)

	// Everyone joins before the start, 64 at a time.
	queuePath, grabPath := fmt.Sprintf("/api/goods/%d/queue", id), fmt.Sprintf("/api/goods/%d/grab", id)
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	var joined atomic.Int64
	for w := range f.shoppers {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if code, _ := f.call(w, "POST", queuePath, nil, nil); code == "ok" {
				joined.Add(1)
			}
		}()
	}
	wg.Wait()
	res.joined = joined.Load()
	if !sleepUntil(ctx, start) {
		return res, ctx.Err()
	}
	runCtx, stop := context.WithTimeout(ctx, outflowFor)
	defer stop()

	// The shoppers: read the ticket once a second; once admitted, grab once.
	var grabsOK atomic.Int64
	for w := range f.shoppers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for runCtx.Err() == nil {
				var tk fairTicket
				if code, _ := f.call(w, "GET", queuePath, nil, &tk); code == "ok" && tk.Ticket.State == "admitted" {
					if code, _ := f.call(w, "POST", grabPath, []string{"X-Admission: " + tk.Ticket.Admission}, nil); code == "ok" {
						grabsOK.Add(1)
					}
					return
				}
				if !sleepUntil(runCtx, time.Now().Add(time.Second)) {
					return
				}
			}
		}()
	}
	// The operator: the latency switch and the counters, twice a second.
	conn := len(f.shoppers)
	for runCtx.Err() == nil {
		at := time.Since(start)
		slow.Store(at >= outflowSlowFrom && at < outflowSlowTo)
		var st outflowStats
		if st2, raw, err := f.client.DoHeaders(conn, shopperAddr(1<<22), "GET", fmt.Sprintf("/api/admin/goods/%d/queue", id), f.t.admin, nil, nil); err == nil && outcome(st2, raw, &st) == "ok" {
			res.samples = append(res.samples, outflowSample{at: at, slow: slow.Load(), admitted: st.Queue.Admitted, rateNow: st.Queue.RateNow, paused: st.Queue.Paused})
			if st.Queue.Admitted >= res.joined && at > outflowSlowTo {
				break
			}
		}
		sleepUntil(runCtx, time.Now().Add(500*time.Millisecond))
	}
	slow.Store(false)
	stop()
	wg.Wait()
	res.grabsOK = grabsOK.Load()
	return res, nil
}

// outflowTable reports the admissions over time, and checks the room paused while slow and recovered after.
func outflowTable(r *bench.Report, res *outflowResult) {
	tab := bench.Table{
		Title: fmt.Sprintf("The waiting room's automatic outflow (queue_rate 0) with every grab %s slower from %s to %s after the start",
			outflowLatency, outflowSlowFrom, outflowSlowTo),
		Header: []string{"seconds after the start", "grabs slowed", "admitted so far", "admissions a second", "rate now", "paused"},
	}
	if res.unavailable != "" {
		tab.Notes = append(tab.Notes, res.unavailable)
		r.Tables = append(r.Tables, tab)
		return
	}
	var pausedAt, resumedAt time.Duration = -1, -1
	last := outflowSample{}
	waitingWhenSlow := false // shoppers still waited when the grabs slowed: the measure means something
	for i, s := range res.samples {
		if s.slow && s.admitted < res.joined {
			waitingWhenSlow = true
		}
		if s.paused && pausedAt < 0 && s.at >= outflowSlowFrom {
			pausedAt = s.at
		}
		if !s.paused && pausedAt >= 0 && resumedAt < 0 && s.at > pausedAt {
			resumedAt = s.at
		}
		if i == 0 || s.at-last.at >= 2*time.Second || i == len(res.samples)-1 {
			perS := 0.0
			if i > 0 {
				perS = float64(s.admitted-last.admitted) / (s.at - last.at).Seconds()
			}
			tab.Rows = append(tab.Rows, []string{fmt.Sprintf("%.1f", s.at.Seconds()), yesNo(s.slow), strconv.FormatInt(s.admitted, 10),
				fmt.Sprintf("%.0f", perS), strconv.FormatInt(s.rateNow, 10), yesNo(s.paused)})
			last = s
		}
	}
	describe := func(d time.Duration, from time.Duration) string {
		if d < 0 {
			return "never"
		}
		return fmt.Sprintf("%.1f s after", (d - from).Seconds())
	}
	tab.Notes = append(tab.Notes, fmt.Sprintf("%d joined before the start; %d admitted shoppers grabbed. Paused %s the grabs were slowed; admitting again %s they were not.",
		res.joined, res.grabsOK, describe(pausedAt, outflowSlowFrom), describe(resumedAt, outflowSlowTo)))
	admitted := int64(0)
	if len(res.samples) > 0 {
		admitted = res.samples[len(res.samples)-1].admitted
	}
	if !waitingWhenSlow {
		tab.Notes = append(tab.Notes, "Every shopper was admitted before the grabs slowed (a small run): the pause is not measured.")
	}
	r.Tables = append(r.Tables, tab)
	r.Checks = append(r.Checks, bench.Check{Name: "fair outflow: paused while slow, every place kept",
		OK:     (pausedAt >= 0 || !waitingWhenSlow) && admitted <= res.joined && res.grabsOK <= admitted,
		Detail: fmt.Sprintf("paused at %s; admitted %d of %d joined; %d grabs won", describe(pausedAt, 0), admitted, res.joined, res.grabsOK)})
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return ""
}
