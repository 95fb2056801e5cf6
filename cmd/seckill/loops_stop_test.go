package main

import (
	"fmt"
	"net/http"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestClosingLeavesNoLoop starts a serve-mode process, works it (a grab, so
// that what starts on a first use has started), closes it, and finds no
// goroutine of the repository's code still waiting in a loop: every
// background loop stops and drains at Close.
func TestClosingLeavesNoLoop(t *testing.T) {
	before := waitingLoops()
	a := startApp(t)
	mt, _ := a.newMerchant()
	sl := a.createSlot(mt, -time.Minute, time.Hour)
	g := a.createGoods(mt, sl.ID, 5, 1)
	tok, _ := a.newUser()
	if st := a.call(http.MethodPost, fmt.Sprintf("/api/goods/%d/grab", g.ID), tok, nil, nil); st != http.StatusCreated {
		t.Fatalf("grab: %d", st)
	}
	if err := a.Main.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	for sig, stack := range waitingLoops() {
		if _, ok := before[sig]; !ok {
			t.Errorf("after Close a loop still waits:\n%s", stack)
		}
	}
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
