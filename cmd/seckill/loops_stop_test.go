package main

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/db/lifecycle"
	"github.com/seckill/seckill/web/ratelimit"
)

// TestClosingLeavesNoLoop starts a serve-mode process, works it (a grab and
// a flush, so that what would start on a first use has started), closes it,
// and finds no goroutine of the repository's code still waiting in a loop:
// every background loop stops and drains at Close. Every lifecycle.Loop
// running is one Main started (Main.start), all of them by the end of
// Open, none on a first use; the ones named below run (the pipeliner's
// lanes and replica watcher, the embedded Redis's clock, the live hub's
// workers among them); and while the process runs, every goroutine waiting
// in the repository's code is a loop's, none started by hand.
func TestClosingLeavesNoLoop(t *testing.T) {
	before, beforeLoops := waitingLoops(), lifecycle.Running()
	// A rate limit on, so the limits' heartbeat runs too.
	a := startApp(t, func(c *Config) { c.RateIP = ratelimit.Rate{N: 1000, Per: time.Minute} })
	ours := map[*lifecycle.Loop]bool{}
	for _, l := range a.Main.Loops() {
		ours[l] = true
	}
	opened := newLoops(beforeLoops)
	for l, name := range opened {
		if !ours[l] {
			t.Errorf("loop %q runs but Main did not start it (Main.start)", name)
		}
	}
	want := []string{"redis pipeliner lane", "redis replica watch", "live events", "switches", "flusher", "asynq worker", "revocations", "locales",
		"live hub poller", "live hub writer", "live hub reader", "live hub keepalive", "live hub sessions", "live hub receiver",
		"rate-limit members", "catalog poll", "refusal memo", "phantom watch", "fair queues"}
	if a.Main.Redis.Embedded {
		want = append(want, "embedded redis clock")
	}
	for _, want := range want {
		if !slices.Contains(slices.Collect(maps.Values(opened)), want) {
			t.Errorf("loop %q does not run after Open (running: %v)", want, slices.Sorted(maps.Values(opened)))
		}
	}
	mt, _ := a.newMerchant()
	sl := a.createSlot(mt, -time.Minute, time.Hour)
	g := a.createGoods(mt, sl.ID, 5, 1)
	tok, _ := a.newUser()
	if st := a.call(http.MethodPost, fmt.Sprintf("/api/goods/%d/grab", g.ID), tok, nil, nil); st != http.StatusCreated {
		t.Fatalf("grab: %d", st)
	}
	if err := a.Main.FlushAll(context.Background()); err != nil {
		t.Fatalf("flush: %v", err)
	}
	for l, name := range newLoops(beforeLoops) {
		if _, ok := opened[l]; !ok {
			t.Errorf("loop %q started on a first use, not by Main at Open", name)
		}
	}
	for sig, stack := range waitingLoops() {
		if _, ok := before[sig]; !ok && !inLoop(stack) {
			t.Errorf("a goroutine waits in the repository's code, started by hand, not as a lifecycle.Loop:\n%s", stack)
		}
	}
	if err := a.Main.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	for _, name := range newLoops(beforeLoops) {
		t.Errorf("after Close loop %q still runs", name)
	}
	for sig, stack := range waitingLoops() {
		if _, ok := before[sig]; !ok {
			t.Errorf("after Close a loop still waits:\n%s", stack)
		}
	}
}

// newLoops are the loops running now that were not in before.
func newLoops(before map[*lifecycle.Loop]string) map[*lifecycle.Loop]string {
	now := lifecycle.Running()
	for l := range before {
		delete(now, l)
	}
	return now
}

// inLoop tells whether a goroutine's stack is a lifecycle.Loop's, or the
// web server's accept loop, which Main runs until Close (Open's Listen), or
// one a Redis Cluster client starts for a node of a caller's pipeline (our
// hooks run in it; the caller waits for it and is checked itself).
func inLoop(stack string) bool {
	return strings.Contains(stack, "\ncreated by github.com/seckill/seckill/db/lifecycle.(*Loop).Start") ||
		strings.Contains(stack, "github.com/seckill/seckill/web.(*Server).Listen(") ||
		strings.Contains(stack, "\ncreated by github.com/redis/go-redis/v9.(*ClusterClient).processPipeline")
}

var goroutineHead = regexp.MustCompile(`^goroutine \d+ \[([^\],]+)`)

// waitingLoops are the goroutines parked in the repository's code (not its
// tests', not the test Redis's), by their stack's functions: a goroutine
// that is ending is running, not parked, and is not one.
func waitingLoops() map[string]string {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	out := map[string]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		m := goroutineHead.FindStringSubmatch(g)
		if m == nil {
			continue
		}
		switch m[1] {
		case "select", "chan receive", "chan send", "sleep", "IO wait", "semacquire", "sync.Cond.Wait", "sync.Mutex.Lock", "select (no cases)":
		default:
			continue
		}
		var funcs []string
		ours := false
		lines := strings.Split(g, "\n")
		for i := 1; i+1 < len(lines); i += 2 {
			fn, file := lines[i], strings.TrimSpace(lines[i+1])
			if strings.HasPrefix(fn, "github.com/seckill/seckill/") && !strings.Contains(file, "_test.go") && !strings.Contains(fn, "/db/dbtest") {
				ours = true
			}
			if p := strings.LastIndexByte(fn, '('); p > 0 {
				fn = fn[:p]
			}
			funcs = append(funcs, fn)
		}
		if ours {
			out[strings.Join(funcs, " ← ")] = g
		}
	}
	return out
}
