package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/db/dbtest"
)

// failoverRig is the colleague's deployment at a smaller scale: a Redis
// Cluster of three masters with a replica each, two web processes, a worker
// and PostgreSQL, with one hot goods on sale.
type failoverRig struct {
	cluster         *redisCluster
	hosts           *hosts
	webs            []*testApp
	tokens          []string
	merchant        string // the goods' merchant's token
	goods           goodsJSON
	master, replica int // ports of the node holding the goods' slot and of its replica
}

// startFailoverRig skips unless the test can start a Redis Cluster and has
// a PostgreSQL (DATABASE_URL); then it starts everything and puts a goods
// of stock units, limit per shopper, on sale for shoppers.
func startFailoverRig(t *testing.T, shoppers int, stock, limit int64, env ...string) *failoverRig {
	t.Helper()
	needRedisBinaries(t)
	if os.Getenv("DATABASE_URL") == "" {
		t.Skip("failover test: set DATABASE_URL to a PostgreSQL that separate processes can share")
	}
	if testing.Short() {
		t.Skip("failover test builds the binary and starts a Redis Cluster and processes")
	}
	r := &failoverRig{cluster: startRedisCluster(t)}
	r.hosts = &hosts{t: t, bin: buildSeckill(t), db: dbtest.DatabaseURL(t), redis: r.cluster.URL(), env: env}
	r.hosts.start("worker-1", ModeWorker)
	r.webs = []*testApp{r.hosts.start("web-1", ModeWeb), r.hosts.start("web-2", ModeWeb)}
	for i := 0; i < shoppers; i++ {
		tok, _ := r.webs[i%2].newUser()
		r.tokens = append(r.tokens, tok)
	}
	r.merchant, _ = r.webs[0].newMerchant()
	sl := r.webs[0].createSlot(r.merchant, -time.Minute, time.Hour)
	r.goods = r.webs[0].createGoods(r.merchant, sl.ID, stock, limit)
	r.master, r.replica = r.cluster.ownerOf(goodsTag(r.goods.ID))
	t.Logf("goods %d (%s, slot %d) lives on master %d, replica %d", r.goods.ID, goodsTag(r.goods.ID),
		r.cluster.keySlot(goodsTag(r.goods.ID)), r.master, r.replica)
	return r
}

// failMasterMidSale runs the grab load, fails the goods' master with fault
// (redisCluster.kill: SIGKILL; redisCluster.stop: SIGSTOP) once every web
// process is serving grabs, waits for its replica's promotion, and goes on
// until every web process has served after answers since the promotion (or
// the bound passes: a stuck run). It returns every answer, the fault and the
// promotion.
func (r *failoverRig) failMasterMidSale(t *testing.T, fault func(port int), loops, after int) (answers []grabAnswer, killed, promoted time.Time) {
	t.Helper()
	load := startGrabLoad(r.webs, r.tokens, r.goods.ID, loops, 10*time.Millisecond)
	if !load.waitUntil(2*time.Minute, func(as []grabAnswer) bool {
		return slices.Min(servedSince(as, time.Time{}, len(r.webs))) >= 20
	}) {
		load.stop()
		t.Fatalf("the sale did not start on every web process: served %v", servedSince(load.snapshot(), time.Time{}, len(r.webs)))
	}
	killed = time.Now()
	fault(r.master)
	promoted = r.cluster.waitPromotion(r.replica, time.Minute)
	load.waitUntil(3*time.Minute, func(as []grabAnswer) bool {
		return slices.Min(servedSince(as, promoted, len(r.webs))) >= after
	})
	return load.stop(), killed, promoted
}

// logHostLines logs the lines of each web process's log that mention
// errors, at most n each: what the processes saw of the failover.
func (r *failoverRig) logHostLines(t *testing.T, n int) {
	t.Helper()
	for _, name := range []string{"web-1", "web-2", "worker-1"} {
		var lines []string
		dials := 0 // go-redis's own line per failed dial, counted
		for _, line := range strings.Split(r.hosts.log(name), "\n") {
			if strings.HasPrefix(line, "redis:") && strings.Contains(line, "failed to dial") {
				dials++
			} else if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") || strings.HasPrefix(line, "redis:") {
				lines = append(lines, line)
			}
		}
		if len(lines) > n {
			lines = append(lines[:n], "...")
		}
		t.Logf("%s's log, warnings and errors (and %d lines of go-redis's failed dials):\n%s", name, dials, strings.Join(lines, "\n"))
	}
}

// failoverLoops is how many grab loops the failover tests run, half on each web process.
const failoverLoops = 32

// failoverFaults are the ways the tests fail the hot goods' master: SIGKILL
// (its connections are closed, new ones refused: a crash) and SIGSTOP (its
// connections hang: a host cut off the network).
var failoverFaults = []string{"SIGKILL", "SIGSTOP"}

// runFailover starts a rig, fails the hot goods' master with fault mid-sale
// and returns the rig and what the load met. A paused master is resumed at
// the end (it rejoins as its successor's replica), so the processes stop
// as they would on a healthy cluster.
func runFailover(t *testing.T, fault string) (r *failoverRig, answers []grabAnswer, killed, promoted time.Time) {
	t.Helper()
	r = startFailoverRig(t, 80, 5000, 100)
	do := r.cluster.kill
	if fault == "SIGSTOP" {
		do = r.cluster.stop
		defer r.cluster.cont(r.master)
	}
	answers, killed, promoted = r.failMasterMidSale(t, do, failoverLoops, 50)
	return r, answers, killed, promoted
}

// logScriptCalls logs how the promoted replica ran the scripts: EVALSHA
// calls that failed (NOSCRIPT: its script cache was empty) and the EVALs of
// go-redis's fallback that loaded them.
func (r *failoverRig) logScriptCalls(t *testing.T) {
	t.Helper()
	info, err := r.cluster.admin[r.replica].Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Logf("INFO commandstats of %d: %v", r.replica, err)
		return
	}
	var lines []string
	for _, line := range strings.Split(info, "\n") {
		if strings.HasPrefix(line, "cmdstat_eval") {
			lines = append(lines, strings.TrimSpace(line))
		}
	}
	t.Logf("scripts on the promoted replica %d: %s", r.replica, strings.Join(lines, "; "))
}

// An experiment, not an assertion: the hot goods' master is killed or
// paused mid-sale, and the test logs, per 100 ms, what each web process
// answered relative to the fault (K) and to the replica's promotion (P),
// when each served grabs again, every 500 with its body, the processes'
// warnings, and how the promoted replica came to run the grab script.
func TestFailoverDiagnosis(t *testing.T) {
	if os.Getenv("FAILOVER_DIAGNOSIS") == "" {
		t.Skip("an experiment that logs timelines: set FAILOVER_DIAGNOSIS=1 to run it (TestFailoverBackWithinTwoSeconds asserts the same runs)")
	}
	for _, fault := range failoverFaults {
		t.Run(fault, func(t *testing.T) {
			r, answers, killed, promoted := runFailover(t, fault)
			logTimeline(t, answers, killed, promoted, len(r.webs))
			logReport(t, analyse(answers, promoted, len(r.webs)), killed, promoted)
			r.logScriptCalls(t)
			r.logHostLines(t, 40)
		})
	}
}

// After the hot goods' master is paused (SIGSTOP; killed: TestFailoverKeepsEveryPromise) mid-sale, every web
// process serves grabs again (an order or a business 409) soon after the
// replica's promotion, and no answer is ever a 500: grabs failed by the
// failover answer 503 with Retry-After. "Soon" is counted in answers, not
// seconds (the machine may be slow): each process serves again before its
// loops met failoverFailuresPerLoop failed answers each since the
// promotion; the seconds are logged. Before the slot map was reloaded on
// failover errors, each process met some 5,300 (49 s of 503s).
func TestFailoverBackWithinTwoSeconds(t *testing.T) {
	for _, fault := range []string{"SIGSTOP"} { // SIGKILL: TestFailoverKeepsEveryPromise checks the same, with its promises
		t.Run(fault, func(t *testing.T) {
			r, answers, killed, promoted := runFailover(t, fault)
			rep := analyse(answers, promoted, len(r.webs))
			logReport(t, rep, killed, promoted)
			for _, a := range rep.internal {
				t.Errorf("web-%d answered %d at K%+.2fs: %s", a.web+1, a.status, a.at.Sub(killed).Seconds(), a.body)
			}
			for _, a := range rep.unexpected {
				t.Errorf("web-%d answered %d %q at K%+.2fs (want an order, a 409, or 503 with Retry-After) %s",
					a.web+1, a.status, a.code, a.at.Sub(killed).Seconds(), a.body)
			}
			checkServedAgain(t, rep, promoted, len(r.webs))
			if t.Failed() {
				logTimeline(t, answers, killed, promoted, len(r.webs))
				r.logHostLines(t, 40)
			}
		})
	}
}

// checkServedAgain fails the test unless every web process served grabs
// again after the promotion before its loops met failoverFailuresPerLoop
// failed answers each.
func checkServedAgain(t *testing.T, rep failoverReport, promoted time.Time, webs int) {
	t.Helper()
	perWeb := failoverLoops / webs
	for w, first := range rep.firstServed {
		if first.IsZero() {
			t.Errorf("web-%d served no grab after the promotion (%d failed answers)", w+1, rep.failedAfter[w])
		} else if rep.failedAfter[w] >= failoverFailuresPerLoop*perWeb {
			t.Errorf("web-%d served again only after %d failed answers since the promotion (%.2f s), want fewer than %d (%d per loop)",
				w+1, rep.failedAfter[w], first.Sub(promoted).Seconds(), failoverFailuresPerLoop*perWeb, failoverFailuresPerLoop)
		}
	}
}

// failoverFailuresPerLoop bounds the failed answers each grab loop may meet
// after the promotion before its process serves again: the grab in flight
// when the master went, and a few sent while the slot map is reloaded.
const failoverFailuresPerLoop = 10

// The hot goods' master loses its replica mid-sale (the replica SIGKILLed):
// with WAIT (REDIS_WAIT_REPLICAS auto) the master's changes answer 503 with
// Retry-After until the next reading of its replicas (each second) finds
// none, and are acknowledged without WAIT after that. Every 201 holds, no
// answer is a 500, and the whole stock is sold once.
func TestReplicaKilledMidSale(t *testing.T) {
	const stock = 3000
	r := startFailoverRig(t, 60, stock, 100, "ORDER_TTL=10m")
	web := r.webs[0]
	load := startGrabLoad(r.webs, r.tokens, r.goods.ID, failoverLoops, 10*time.Millisecond)
	if !load.waitUntil(2*time.Minute, func(as []grabAnswer) bool {
		return slices.Min(servedSince(as, time.Time{}, len(r.webs))) >= 20
	}) {
		load.stop()
		t.Fatal("the sale did not start on every web process")
	}
	killed := time.Now()
	r.cluster.kill(r.replica)
	load.waitUntil(5*time.Minute, func([]grabAnswer) bool {
		var g struct{ Goods goodsJSON }
		return web.call("GET", fmt.Sprintf("/api/goods/%d", r.goods.ID), "", nil, &g) == http.StatusOK && g.Goods.Remaining == 0
	})
	answers := load.stop()
	rep := analyse(answers, killed, len(r.webs))
	unavailable := 0
	for _, a := range answers {
		if a.status == http.StatusServiceUnavailable && !a.at.Before(killed) {
			unavailable++
		}
	}
	for w := range r.webs {
		t.Logf("web-%d: grabs served again %.2f s after the replica's kill, last refused at K%+.2fs", w+1, rep.firstServed[w].Sub(killed).Seconds(), rep.lastFailure[w].Sub(killed).Seconds())
	}
	t.Logf("%d answers were 503 (WAIT fell short) after the kill", unavailable)
	for _, a := range append(rep.internal, rep.unexpected...) {
		t.Errorf("web-%d answered %d %q at K%+.2fs: %s", a.web+1, a.status, a.code, a.at.Sub(killed).Seconds(), a.body)
	}
	acked := ackedOrders(t, answers, killed)
	have := r.wholeStock(t, r.store(t), stock)
	for id, uid := range acked {
		if have[id] != uid {
			t.Errorf("acknowledged order %d of shopper %d: in PostgreSQL as shopper %d's", id, uid, have[id])
		}
	}
}
