package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/cmd/seckill/bench/scenarios"
	"github.com/seckill/seckill/db/dbtest"
)

// TestMain lets the bench's idle-socket child process run from the test binary.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		if child := scenarios.Child(os.Args[1]); child != nil {
			if err := child(os.Args[2:]); err != nil {
				os.Stderr.WriteString(err.Error() + "\n")
				os.Exit(1)
			}
			return
		}
	}
	installContractCheck() // every /api exchange is checked against docs/openapi.yaml (contract_test.go)
	code := m.Run()
	if !contractReport() && code == 0 {
		code = 1
	}
	os.Exit(code)
}

// The bench's smoke mode runs every scenario at a tiny size against an
// in-process server and must find every invariant holding. No timing is asserted.
func TestBenchSmoke(t *testing.T) {
	o, err := scenarios.ParseOptions([]string{"-smoke"})
	if err != nil {
		t.Fatal(err)
	}
	o.RedisURL, o.DatabaseURL = dbtest.RedisURL(t), dbtest.DatabaseURL(t)
	o.Progress = nil
	o.Out = t.TempDir()
	r, err := benchRun(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteFiles(o.Out); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"HTTP goods grab": false, "Redis limit (EVALSHA)": false, scenarios.HTTPFloor: false, "naive SQLite grab": false, "HTTP red packet grab": false, "HTTP coupon grab": false,
		scenarios.UnderAttack: false, scenarios.LimitsOff: false, scenarios.HTTPWins: false, scenarios.RedisWins: false, scenarios.HTTPJoin: false}
	for _, res := range r.Results {
		if _, ok := want[res.Name]; ok {
			want[res.Name] = res.Requests == int64(o.Requests)
		}
		if res.Codes["transport"] > 0 {
			t.Errorf("%s: %d transport errors", res.Name, res.Codes["transport"])
		}
	}
	for name, ran := range want {
		if !ran {
			t.Errorf("scenario %q did not run all %d requests", name, o.Requests)
		}
	}
	if len(r.Checks) < 8 {
		t.Errorf("only %d invariants checked", len(r.Checks))
	}
	// Every grab of the win scenarios wins, and the report states the win targets.
	for _, name := range []string{scenarios.HTTPWins, scenarios.RedisWins, scenarios.HotItemName(1, false), scenarios.HotItemName(3, false)} {
		if res := r.Result(name); res == nil || res.Codes["ok"] != res.Requests {
			t.Errorf("%s: not every grab won: %+v", name, res)
		}
	}
	// Every measure is taken on a real redis-server. The embedded Redis
	// answers no INFO sections: the measures that need Redis's own CPU say
	// so, and the rest (this process's CPU holds the embedded Redis's) are taken.
	embedded := o.RedisURL == ""
	redisOnly := map[string]bool{"target 2: Redis work per win vs the grab script alone": true}
	waitOnly := map[string]bool{"WAIT cost": true} // the smoke's Redis has no replica: nothing waits
	for _, name := range []string{scenarios.HotItemName(1, false), scenarios.HotItemName(3, false), scenarios.HotItemName(3, true)} {
		redisOnly["target 3: Redis nodes, "+name] = true
	}
	for _, k := range []string{"target 1: wins vs refusals", "target 2: Redis work per win vs the grab script alone",
		"machine CPU per win vs per refusal", "CPU per request: " + scenarios.HTTPWins, "CPU per request: " + scenarios.RedisWins,
		"target 3: Redis nodes, " + scenarios.HotItemName(1, false), "target 3: Redis nodes, " + scenarios.HotItemName(3, false),
		"target 3: Redis nodes, " + scenarios.HotItemName(3, true), "target 3: round trips a grab, " + scenarios.HotItemName(3, true), "WAIT cost"} {
		v := r.Extra[k]
		switch {
		case v == "" || strings.Contains(v, "NaN") || strings.Contains(v, "Inf"):
			t.Errorf("report measure %q: %q", k, v)
		case waitOnly[k]:
			if !strings.HasPrefix(v, "not measured: the target's Redis masters have no replica") {
				t.Errorf("report measure %q without a replica: %q", k, v)
			}
		case embedded && redisOnly[k]:
			if !strings.HasPrefix(v, "not measured on the embedded Redis: ") {
				t.Errorf("report measure %q on the embedded Redis: %q, want it to say it is not measured there", k, v)
			}
		case strings.HasPrefix(v, "not measured"):
			t.Errorf("report measure %q not taken: %q", k, v)
		}
	}
	// Each target of the win and the refusal has its line (what was measured, the goal, pass
	// or not met); those of Redis's own CPU only on a real redis-server.
	seen := map[string]int{}
	for _, tg := range r.Targets {
		if tg.Measured == "" || tg.Goal == "" || strings.Contains(tg.Measured, "NaN") || strings.Contains(tg.Measured, "Inf") {
			t.Errorf("target %q: measured %q, goal %q", tg.Name, tg.Measured, tg.Goal)
		}
		n, _, _ := strings.Cut(tg.Name, ".")
		seen[n]++
	}
	wantTargets := map[string]int{"1": 2, "2": 1, "3": 2, "4": 1}
	if embedded {
		wantTargets["1"], wantTargets["3"] = 1, 0
	}
	for n, want := range wantTargets {
		if seen[n] != want {
			t.Errorf("target %s: %d lines, want %d (%+v)", n, seen[n], want, r.Targets)
		}
	}
	// The doors' floor is the sold-out refusal's request refused past the
	// grab's doors alone; the report parts a refusal's cost with it.
	if res := r.Result(scenarios.HTTPDoors); res == nil || res.Requests != int64(o.Requests) || res.Codes["sold_out"] != res.Requests {
		t.Errorf("%s: want every one of %d answered sold_out: %+v", scenarios.HTTPDoors, o.Requests, res)
	}
	for _, k := range []string{"the doors' floor vs no-op requests (what a grab's doors cost)", "sold-out refusals vs the doors' floor (what the engine adds)", scenarios.WinTailLine} {
		if v := r.Extra[k]; v == "" || strings.Contains(v, "NaN") || strings.Contains(v, "Inf") {
			t.Errorf("report measure %q: %q", k, v)
		}
	}
	// What a waiting-room join costs, the server's goroutines
	// around the joins, and (on a real redis-server) the rooms' memory.
	joinLines := []string{"a waiting-room join vs a sold-out refusal", "server goroutines around the join turns"}
	if !embedded {
		joinLines = append(joinLines, "Redis memory a waiting shopper")
	}
	for _, k := range joinLines {
		if v := r.Extra[k]; v == "" || strings.Contains(v, "NaN") || strings.Contains(v, "Inf") {
			t.Errorf("report measure %q: %q", k, v)
		}
	}
	if !strings.Contains(r.Markdown(), "| target | measured | goal | result |") {
		t.Error("the report has no table of targets")
	}
	for _, c := range r.Checks {
		if !c.OK {
			t.Errorf("invariant %s violated: %s", c.Name, c.Detail)
		}
	}
	t.Log("\n" + r.Markdown())
}

// Against a running server (-url), the bench seeds users through the
// server's database file, signs their tokens with its secret, and runs the
// HTTP scenarios with their invariants; the in-process references are skipped.
func TestBenchRemote(t *testing.T) {
	a := startApp(t)
	o, err := scenarios.ParseOptions([]string{"-smoke", "-url", a.URL, "-db-path", a.Config.DBPath, "-database-url", a.Config.DatabaseURL, "-session-secret", a.Config.SessionSecret, "-idle-ws", "0"})
	if err != nil {
		t.Fatal(err)
	}
	o.Progress = nil
	r, err := benchRun(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, res := range r.Results {
		got[res.Name] = res.Requests
	}
	for _, name := range []string{"HTTP goods grab", scenarios.HTTPFloor, "HTTP red packet grab", "HTTP coupon grab", scenarios.HTTPWins} {
		if got[name] != int64(o.Requests) {
			t.Errorf("%s: %d requests, want %d", name, got[name], o.Requests)
		}
	}
	if _, ok := got["Redis limit (EVALSHA)"]; ok {
		t.Error("the Redis limit ran against a remote server")
	}
	if len(r.Checks) < 8 || r.Failed() {
		t.Errorf("checks: %+v", r.Checks)
	}
}

// On a Redis whose master has a replica, the bench measures the cost of
// waiting for it: the same wins through a twin that does not wait, in the
// same rounds. Without a replica it says why it measured nothing.
func TestBenchWaitCost(t *testing.T) {
	master := dbtest.StartServer(t)
	master.StartReplica()
	o, err := scenarios.ParseOptions([]string{"-smoke", "-scenarios", "wins,wins-nowait", "-idle-ws", "0"})
	if err != nil {
		t.Fatal(err)
	}
	o.RedisURL, o.DatabaseURL = "redis://"+master.Addr, dbtest.DatabaseURL(t)
	o.WaitTimeout = 2 * time.Second // a healthy replica confirms within it however busy the machine
	o.Progress = nil
	r, err := benchRun(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{scenarios.HTTPWins, scenarios.HTTPWinsNoWait} {
		if res := r.Result(name); res == nil || res.Codes["ok"] != int64(o.Requests) {
			t.Errorf("%s: not every grab won: %+v", name, res)
		}
	}
	if v := r.Extra["WAIT cost"]; v == "" || strings.HasPrefix(v, "not measured") {
		t.Errorf("WAIT cost on a master with a replica: %q", v)
	}
	for _, c := range r.Checks {
		if !c.OK {
			t.Errorf("invariant %s violated: %s", c.Name, c.Detail)
		}
	}
	t.Log("\n" + r.Markdown())
}
