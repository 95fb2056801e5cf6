package main

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/seckill/seckill/cmd/seckill/bench"
	"github.com/seckill/seckill/cmd/seckill/bench/scenarios"
	"github.com/seckill/seckill/db/dbtest"
)

// The crowd at a tiny size (50 shoppers, 20 live sockets in a second
// process) against an in-process server: every shopper loads the pages and
// their files, subscribes, polls and grabs once; the goods sell exactly
// their stock; every kind of read is loaded by both readers against the
// no-op; each stock change is timed to every live socket; the measures
// the embedded Redis cannot give say so. No timing is asserted.
func TestBenchCrowd(t *testing.T) {
	o, err := scenarios.ParseOptions([]string{"-smoke", "-scenarios", "crowd", "-idle-ws", "0"})
	if err != nil {
		t.Fatal(err)
	}
	o.RedisURL, o.DatabaseURL = dbtest.RedisURL(t), dbtest.DatabaseURL(t)
	o.Progress = nil
	r, err := benchRun(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + r.Markdown())
	checkCrowdReport(t, o, r, true)
}

// Against a running server (-url) the crowd runs the same way; what only
// an in-process server lets it measure (Redis, CPU) says so.
func TestBenchCrowdRemote(t *testing.T) {
	a := startApp(t)
	o, err := scenarios.ParseOptions([]string{"-smoke", "-scenarios", "crowd", "-url", a.URL, "-db-path", a.Config.DBPath, "-database-url", a.Config.DatabaseURL, "-session-secret", a.Config.SessionSecret})
	if err != nil {
		t.Fatal(err)
	}
	o.Progress = nil
	r, err := benchRun(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkCrowdReport(t, o, r, false)
	if v := r.Extra["crowd: Redis commands a read"]; !strings.HasPrefix(v, "not measured: a server the bench does not run") {
		t.Errorf("Redis commands a read against a remote server: %q", v)
	}
}

func checkCrowdReport(t *testing.T, o *scenarios.Options, r *bench.Report, inProcess bool) {
	t.Helper()
	if len(r.Tables) != 2 {
		t.Fatalf("%d tables, want the crowd's and its reads'", len(r.Tables))
	}
	// The crowd: every kind of request by both readers, none lost on the way.
	crowdRows := map[string]int64{}
	for _, row := range r.Tables[0].Rows {
		n, _ := strconv.ParseInt(row[2], 10, 64)
		crowdRows[row[0]+", "+row[1]] = n
		if strings.Contains(row[6], "transport") || strings.Contains(row[6], "not_subscribed") {
			t.Errorf("crowd %s, %s: %s", row[0], row[1], row[6])
		}
	}
	half := int64(o.Crowd.Shoppers / 2)
	for _, kind := range []string{"front page", "goods page", "WebSocket open + subscribe", "goods JSON catch-up", "grab"} {
		for _, who := range []string{scenarios.WhoAnon, scenarios.WhoSigned} {
			if got := crowdRows[kind+", "+who]; got != half {
				t.Errorf("crowd %s, %s: %d requests, want %d", kind, who, got, half)
			}
		}
	}
	for _, who := range []string{scenarios.WhoAnon, scenarios.WhoSigned} {
		// Polls are not counted on: on a busy machine a shopper may load
		// only after the start and grab at once, polling never.
		if crowdRows["static file, "+who] < 2*half {
			t.Errorf("crowd %s: %d files and %d polls for %d shoppers", who, crowdRows["static file, "+who], crowdRows["goods JSON poll, "+who], half)
		}
	}
	checks := 0
	for _, c := range r.Checks {
		if strings.HasPrefix(c.Name, "crowd: ") {
			checks++
		}
		if !c.OK {
			t.Errorf("invariant %s violated: %s", c.Name, c.Detail)
		}
	}
	if checks != 4 {
		t.Errorf("%d crowd invariants checked, want 4", checks)
	}
	if !strings.Contains(strings.Join(r.Tables[0].Notes, " "), fmt.Sprintf("%d of %d live sockets open", o.Crowd.Live, o.Crowd.Live)) {
		t.Errorf("live sockets: %q", r.Tables[0].Notes)
	}
	// The reads: each kind by both readers against the no-op, every request answered as wanted.
	reads := r.Tables[1]
	if len(reads.Rows) != 1+7*2+1 {
		t.Fatalf("%d read rows, want the no-op, 7 reads × 2 readers and the signed-in reader's own orders: %v", len(reads.Rows), reads.Rows)
	}
	for _, row := range reads.Rows[1:] {
		name := "crowd read: " + row[0] + ", " + row[1]
		if strings.HasPrefix(row[2], "not measured") {
			if !strings.HasPrefix(row[0], "304") { // only a server that gives no ETag leaves a read out
				t.Errorf("%s: %s", name, row[2])
			}
			continue
		}
		res := r.Result(name)
		if res == nil || res.Requests != int64(o.Requests) || res.Codes["ok"] != res.Requests {
			t.Errorf("%s: %+v, want %d requests all ok", name, res, o.Requests)
		}
		if strings.Contains(strings.Join(row, " "), "NaN") || strings.Contains(strings.Join(row, " "), "Inf") {
			t.Errorf("%s: %v", name, row)
		}
	}
	if res := r.Result(scenarios.CrowdNoop); res == nil || res.Codes["ok"] != int64(o.Requests) {
		t.Errorf("no-op: %+v", res)
	}
	for name := range r.Extra {
		if strings.HasPrefix(name, "CPU per request: crowd") {
			t.Errorf("the crowd's reads among the grabs' CPU lines: %q", name)
		}
	}
	// The stock changes reached the live sockets and the report says how soon.
	lag := r.Extra["crowd: stock event lag to the live sockets"]
	if !strings.HasPrefix(lag, fmt.Sprintf("a stock change (one grab) reached 50%% of the %d live sockets in ", o.Crowd.Live)) ||
		!strings.Contains(lag, fmt.Sprintf("(%d changes", o.Crowd.Probes)) {
		t.Errorf("lag: %q", lag)
	}
	targets := map[string]bench.Target{}
	for _, tg := range r.Targets {
		targets[tg.Name] = tg
		if tg.Measured == "" || tg.Goal == "" || strings.Contains(tg.Measured, "NaN") {
			t.Errorf("target %q: measured %q, goal %q", tg.Name, tg.Measured, tg.Goal)
		}
	}
	if _, ok := targets[fmt.Sprintf("crowd: a stock change reaches 99%% of the live sockets (%d, held by a second process)", o.Crowd.Live)]; !ok {
		t.Errorf("no lag target among %v", reflect.ValueOf(targets).MapKeys())
	}
	if _, ok := targets["crowd read, goods JSON /api/goods/{id}, anonymous: reads/s ÷ no-op and p99"]; !ok {
		t.Errorf("no read target among %v", reflect.ValueOf(targets).MapKeys())
	}
	_, redisTarget := targets["crowd reads: Redis commands a read (INFO commandstats, net of the no-op's background rate), the most of any read"]
	if embedded := inProcess && o.RedisURL == ""; embedded || !inProcess {
		if redisTarget || r.Extra["crowd: Redis commands a read"] == "" {
			t.Errorf("Redis commands a read, not measurable here: target %v, %q", redisTarget, r.Extra["crowd: Redis commands a read"])
		}
	} else if !redisTarget {
		t.Error("no Redis target on a real redis-server")
	}
	if _, ok := targets["crowd reads: SQL statements a read (the app's count, net of the no-op's background rate), the most of any read"]; !ok && r.Extra["crowd: SQL statements a read"] == "" {
		t.Error("SQL statements a read: neither measured nor said why not")
	}
}
